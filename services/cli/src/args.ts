import { parseInstant, ValidationError } from "@chronolog/core";

/**
 * What the CLI accepts where it takes an instant or a run id: every form it prints. An instant
 * is a whole ISO-8601 instant with a zone, the short form the tables show (`2026-11-30T02:00Z`),
 * or a date alone (`2026-11-30`, midnight UTC). A run id is `WORKFLOW@INSTANT` in any of those.
 */

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** The instant `text` names, for the flag or argument `field` (a ValidationError otherwise). */
export function instantArg(text: string, field: string): string {
  const iso = DATE_ONLY.test(text) ? `${text}T00:00:00Z` : text;
  try {
    return parseInstant(iso, field).toISOString();
  } catch {
    throw new ValidationError(field, [
      {
        path: "",
        message: `"${text}" is not an instant: use 2026-11-30, 2026-11-30T02:00Z or 2026-11-30T02:00:00.000Z (a zone is required)`,
      },
    ]);
  }
}

/** A run id as the log keeps it (`WORKFLOW@` and the whole instant), from any form the CLI prints. */
export function runIdArg(text: string, field = "run"): string {
  const at = text.lastIndexOf("@");
  if (at <= 0 || at === text.length - 1)
    throw new ValidationError(field, [
      {
        path: "",
        message: `"${text}" is not a run id: use WORKFLOW@LOGICAL_DATE, e.g. etl@2026-11-30T02:00Z`,
      },
    ]);
  return `${text.slice(0, at)}@${instantArg(text.slice(at + 1), field)}`;
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
