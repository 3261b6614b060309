import { formatPath } from "../errors.js";
import { type TaskSpec, taskSpecSchema } from "../spec.js";

/** One changed field of a task declaration; `undefined` means the field is absent on that side. */
export interface TaskSpecChange {
  readonly field: string;
  readonly from: unknown;
  readonly to: unknown;
}

/**
 * The fields that differ between two declarations of a task, as dotted paths
 * (`operator.command`, `config.table`, `retry.maxAttempts`). Objects are compared field by field;
 * arrays (`parents`, `expectStatus`) and scalars as whole values; an operator whose `type` changed
 * is reported as one change of `operator`. Top-level fields come in the order of `taskSpecSchema`,
 * nested fields in alphabetical order. Empty when the two are equal: write nothing then.
 */
export function diffTaskSpecs(before: TaskSpec, after: TaskSpec): TaskSpecChange[] {
  const changes: TaskSpecChange[] = [];
  const order = Object.keys(taskSpecSchema.shape);
  const rank = (k: string) => {
    const i = order.indexOf(k);
    return i < 0 ? order.length : i;
  };
  const keys = unionKeys(before, after).sort((a, b) => rank(a) - rank(b) || compare(a, b));
  const b = before as unknown as Record<string, unknown>;
  const a = after as unknown as Record<string, unknown>;
  for (const key of keys) {
    if (key === "operator" && before.operator.type !== after.operator.type) {
      changes.push({ field: "operator", from: before.operator, to: after.operator });
      continue;
    }
    diffValue([key], b[key], a[key], changes);
  }
  return changes;
}

function diffValue(path: PropertyKey[], from: unknown, to: unknown, out: TaskSpecChange[]): void {
  if (isPlainObject(from) && isPlainObject(to)) {
    for (const key of unionKeys(from, to).sort(compare)) {
      diffValue([...path, key], from[key], to[key], out);
    }
    return;
  }
  if (!deepEqual(from, to)) out.push({ field: formatPath(path), from, to });
}

function unionKeys(a: object, b: object): string[] {
  const keys = new Set(Object.keys(a));
  for (const k of Object.keys(b)) keys.add(k);
  return [...keys];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Structural equality of JSON-like values; key order does not matter, array order does. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}
