import {
  dateArg,
  intervalOn,
  PRIORITY_MAX,
  PRIORITY_MIN,
  type TaskState,
  ValidationError,
} from "@chronolog/core";

/** Instants and run ids, in every form the CLI prints (see @chronolog/core). */
export { instantInput as instantArg, runIdInput as runIdArg } from "@chronolog/core";

/**
 * The interval of `task` that `--interval` (or `flag`) names: an instant as it is, or a day: the
 * one interval that starts on it in the task's zone (refused, listing them, if several do).
 */
export function intervalArg(text: string, task: Pick<TaskState, "id" | "spec">, flag = "--interval"): string {
  return intervalOn(dateArg(text, flag), task.spec, flag, task.id);
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  k: 1024,
  kib: 1024,
  kb: 1000,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  mb: 1000 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  gb: 1000 ** 3,
};

/** A size in bytes: `1048576`, `512KiB`, `1MiB`, `2M` (binary), `1MB` (decimal), `0`. */
export function byteSizeArg(text: string, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = SIZE_UNITS[(m?.[2] ?? "").toLowerCase()];
  const n = m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : Number.NaN;
  if (!Number.isSafeInteger(n))
    throw new ValidationError(flag, [
      { path: "", message: `takes a size in bytes such as 1048576, 512KiB or 1MiB, not "${text}"` },
    ]);
  return n;
}

/** A priority: an integer from -1000 to 1000 (`--priority 5`, `--priority -10`). */
export function priorityArg(text: string, flag = "--priority"): number {
  const n = /^\s*-?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < PRIORITY_MIN || n > PRIORITY_MAX)
    throw new ValidationError(flag, [
      { path: "", message: `takes an integer from ${PRIORITY_MIN} to ${PRIORITY_MAX}, not "${text}"` },
    ]);
  return n;
}

/** A length of time in seconds, more than 0: `30`, `2.5`. */
export function secondsArg(text: string, flag: string): number {
  const n = /^\s*\d+(?:\.\d+)?\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(n > 0) || !Number.isFinite(n))
    throw new ValidationError(flag, [
      { path: "", message: `takes a number of seconds more than 0, such as 30 or 2.5, not "${text}"` },
    ]);
  return n;
}
