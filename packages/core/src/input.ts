import { ValidationError } from "./errors.js";
import { parseInstant } from "./schedule/index.js";

/**
 * What the CLI and the HTTP API accept where it takes an instant or a run id: every form they print. An instant
 * is a whole ISO-8601 instant with a zone, the short form the tables show (`2026-11-30T02:00Z`),
 * or a date alone (`2026-11-30`, midnight UTC). A run id is `WORKFLOW@INSTANT` in any of those.
 */

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** The instant `text` names, for the flag or argument `field` (a ValidationError otherwise). */
export function instantInput(text: string, field: string): string {
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

/** A run id as the log keeps it (`WORKFLOW@` and the whole instant), from any form the CLI prints or the API returns. */
export function runIdInput(text: string, field = "run"): string {
  const at = text.lastIndexOf("@");
  if (at <= 0 || at === text.length - 1)
    throw new ValidationError(field, [
      {
        path: "",
        message: `"${text}" is not a run id: use WORKFLOW@LOGICAL_DATE, e.g. etl@2026-11-30T02:00Z${
          // A task's key where a run was meant: one interval of a task is retried, not rerun.
          text.includes("/")
            ? `; to run one interval of a task again: chronolog retry ${text} --interval DATE`
            : ""
        }`,
      },
    ]);
  return `${text.slice(0, at)}@${instantInput(text.slice(at + 1), field)}`;
}
