import { format } from "node:util";
import { ChronologError, type ChronologErrorType, jsonWithBigints } from "@chronolog/core";

/** An error meant for the person at the terminal: printed as is, with an exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/**
 * Exit codes by typed error: the one place they are mapped, over the whole union (a kind of
 * error without an exit code fails to compile). 2: bad input, nothing written; 3: a
 * compare-and-set lost to another writer; 4: what was named does not exist, or cannot be read;
 * 8: refused for where its subject stands; 1: the log could not do what was asked.
 */
export const EXIT_CODES: Readonly<Record<ChronologErrorType, number>> = {
  validation: 2,
  unknown_event_type: 2,
  cron_schedule: 2,
  template: 2,
  invalid_stream_name: 2,
  invalid_expected_revision: 2,
  invalid_append: 2,
  wrong_expected_revision: 3,
  log_moved: 3,
  conflict_retries_exhausted: 3,
  not_found: 4,
  unsupported_schema_version: 4,
  state: 8,
  unsupported_log_layout: 4,
  log_closed: 1,
  log_read_only: 1,
  append_outcome_unknown: 1,
  append_expired: 1,
  log_unavailable: 1,
  foreign_record: 1,
};

/** The exit codes every command uses, as `--help` and the README show them. */
export const EXIT_CODE_HELP = `
Exit codes (every command):
  0  done
  1  the log could not do what was asked (closed, read-only, unreachable), or an internal error
  2  invalid input: a file, field, flag or argument; nothing was written
  3  a compare-and-set conflict: another writer changed the stream first; nothing was written
  4  what was named does not exist (task, run, workflow), or stored data this version cannot read
  5  a hash does not match: the log's chain, an expected event or anchor, an export (log verify), or an output file (logs)
  6  a backfill stopped: an interval of it failed, or it was cancelled
  7  a backfill did not finish within its --timeout
  8  refused for where its subject stands (pausing a paused task, rerunning a running run)
  141  the output's reader went away (chronolog tasks | head), as SIGPIPE ends a tool`;

export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  // (A type outside the union can only come from code compiled against another version.)
  if (error instanceof ChronologError) return EXIT_CODES[error.type] ?? 1;
  return 1;
}

export function messageOf(error: unknown): string {
  if (error instanceof ChronologError) return `${error.type}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** JSON with bigints as strings. */
export const toJson = jsonWithBigints;

/**
 * A terminal's control characters: C0 but tab and newline, DEL and C1. In what the CLI prints
 * of names, messages and the output of others' tasks (a failed attempt's last line of stderr),
 * they would move the cursor, recolour or retitle the operator's terminal.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters shown escaped
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const CONTROLS = new RegExp(CONTROL.source, "g");

/** `text` with each control character shown as its escape (`\u001b`). */
export function printable(text: string): string {
  return CONTROL.test(text)
    ? text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : text;
}

/**
 * Makes console.log, .error, .warn and .info print what `printable` makes of their text: every
 * command's lines go through them. What `logs` prints, a task's output as it wrote it, goes
 * straight to the standard output, whole.
 */
export function printableConsole(): void {
  for (const name of ["log", "error", "warn", "info"] as const) {
    const write = console[name].bind(console);
    console[name] = (...args: unknown[]) => write(printable(format(...args)));
  }
}
