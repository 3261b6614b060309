/**
 * Config merge for declarations: `workflow.config` <- `task.config` <- `operator.config` (inline),
 * later levels winning. Plain objects merge key by key, recursively; anything else (arrays,
 * scalars, `null`) at a later level replaces the earlier value whole. Inputs are not modified.
 */
export function mergeTaskConfig(
  ...levels: ReadonlyArray<Readonly<Record<string, unknown>> | undefined>
): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  for (const level of levels) {
    if (level) out = mergeInto(out, level);
  }
  return out;
}

function mergeInto(base: Record<string, unknown>, over: Readonly<Record<string, unknown>>) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(base)) define(out, k, v);
  for (const [k, v] of Object.entries(over)) {
    const current = Object.hasOwn(out, k) ? out[k] : undefined;
    define(out, k, isPlainObject(current) && isPlainObject(v) ? mergeInto(current, v) : clone(v));
  }
  return out;
}

function clone(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clone);
  if (isPlainObject(value)) return mergeInto({}, value);
  return value;
}

/** Sets an own property even for the key `__proto__`. */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
