import { paramEnvName } from "@chronolog/core";
import type { RenderContext } from "./context.js";
import { templateVariables } from "./context.js";
import { TemplateError } from "./errors.js";

/**
 * The template values a shell task also gets as environment variables, so that a command can
 * use a value anywhere (inside quotes, a here-document, `$(...)`) as `"$CHRONOLOG_PARAM_NOTE"`:
 * the shell expands a variable into data, never into code.
 *
 * - each param: `CHRONOLOG_PARAM_<NAME>`, the name upper-cased and every character that is not
 *   a letter or a digit made `_` (`params.note` -> `CHRONOLOG_PARAM_NOTE`, `params.dry-run` ->
 *   `CHRONOLOG_PARAM_DRY_RUN`);
 * - each top-level key of the config: `CHRONOLOG_CONFIG_<KEY>` the same way (objects and arrays
 *   as JSON, `null` as empty);
 * - the builtins: `CHRONOLOG_DS`, `CHRONOLOG_DS_NODASH`, `CHRONOLOG_TS`, `CHRONOLOG_TS_NODASH`,
 *   `CHRONOLOG_LOGICAL_DATE`, `CHRONOLOG_DATA_INTERVAL_START`, `CHRONOLOG_DATA_INTERVAL_END`,
 *   `CHRONOLOG_PREV_INTERVAL_START` (empty when none), `CHRONOLOG_TASK_PROJECT`,
 *   `CHRONOLOG_TASK_ACCOUNT`, `CHRONOLOG_TASK_NAME`, `CHRONOLOG_TASK_PARTITION`.
 */

/** `note` -> `NOTE`, `dry-run` -> `DRY_RUN`. */
export function envSuffix(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

export { paramEnvName };

/** The variable a top-level config key is given in: `CHRONOLOG_CONFIG_TABLE` for `table`. */
export function configEnvName(key: string): string {
  return `CHRONOLOG_CONFIG_${envSuffix(key)}`;
}

/** The builtins, by the name a template reads them by. */
export const BUILTIN_ENV: Readonly<Record<string, string>> = {
  ds: "CHRONOLOG_DS",
  ds_nodash: "CHRONOLOG_DS_NODASH",
  ts: "CHRONOLOG_TS",
  ts_nodash: "CHRONOLOG_TS_NODASH",
  logical_date: "CHRONOLOG_LOGICAL_DATE",
  data_interval_start: "CHRONOLOG_DATA_INTERVAL_START",
  data_interval_end: "CHRONOLOG_DATA_INTERVAL_END",
  prev_interval_start: "CHRONOLOG_PREV_INTERVAL_START",
  "task.project": "CHRONOLOG_TASK_PROJECT",
  "task.account": "CHRONOLOG_TASK_ACCOUNT",
  "task.name": "CHRONOLOG_TASK_NAME",
  "task.partition": "CHRONOLOG_TASK_PARTITION",
};

/**
 * Names that map to one variable (`dry-run` and `dry_run`): the first of each group, and the
 * variable. Such a variable is not set: it could not say which value it holds.
 */
export function clashingNames(
  names: Iterable<string>,
  envName: (n: string) => string,
): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const n of names) {
    const v = envName(n);
    by.set(v, [...(by.get(v) ?? []), n]);
  }
  for (const [v, ns] of by) if (ns.length < 2) by.delete(v);
  return by;
}

function envText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value) ?? "";
  return String(value);
}

/**
 * The environment a shell task is given for a render context (see the module's comment).
 * Params and config keys whose names clash are left out. Throws `TemplateError` for a value with
 * a NUL byte (no process can be given one).
 */
export function taskEnvironment(context: RenderContext): Record<string, string> {
  const v = templateVariables(context);
  const env: Record<string, string> = {};
  const builtins: Record<string, unknown> = {
    ds: v.ds,
    ds_nodash: v.ds_nodash,
    ts: v.ts,
    ts_nodash: v.ts_nodash,
    logical_date: v.logical_date,
    data_interval_start: v.data_interval_start,
    data_interval_end: v.data_interval_end,
    prev_interval_start: v.prev_interval_start,
    "task.project": v.task.project,
    "task.account": v.task.account,
    "task.name": v.task.name,
    "task.partition": v.task.partition,
  };
  for (const [name, value] of Object.entries(builtins)) env[BUILTIN_ENV[name] as string] = envText(value);
  const config = context.config ?? {};
  const configClash = clashingNames(Object.keys(config), configEnvName);
  for (const [k, value] of Object.entries(config)) {
    const name = configEnvName(k);
    if (!configClash.has(name)) env[name] = envText(value);
  }
  const params = context.params ?? {};
  const paramClash = clashingNames(Object.keys(params), paramEnvName);
  for (const [k, value] of Object.entries(params)) {
    const name = paramEnvName(k);
    if (!paramClash.has(name)) env[name] = value;
  }
  // A process cannot be given a NUL byte: said here, where the task is held with the reason,
  // rather than by the worker as it starts the task.
  for (const [name, value] of Object.entries(env)) {
    if (value.includes("\u0000"))
      throw new TemplateError("environment", "context", `${name}: the value contains a NUL byte`);
  }
  return env;
}

/**
 * The variable that holds what a template output reads, when it reads one value as is:
 * `params.note` -> `CHRONOLOG_PARAM_NOTE`, `ds` -> `CHRONOLOG_DS`, `config.table` ->
 * `CHRONOLOG_CONFIG_TABLE`. `undefined` for any other expression (`config.a.b`, `"x"`).
 */
export function envNameOf(expression: string): string | undefined {
  const e = expression.trim();
  const param = /^params(?:\.([A-Za-z_][A-Za-z0-9_-]*)|\[\s*(?:"([^"]+)"|'([^']+)')\s*\])$/.exec(e);
  if (param) return paramEnvName((param[1] ?? param[2] ?? param[3]) as string);
  const config = /^config(?:\.([A-Za-z_][A-Za-z0-9_-]*)|\[\s*(?:"([^"]+)"|'([^']+)')\s*\])$/.exec(e);
  if (config) return configEnvName((config[1] ?? config[2] ?? config[3]) as string);
  return BUILTIN_ENV[e];
}
