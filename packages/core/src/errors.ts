/**
 * Every kind of error the project throws on purpose, one literal each. The classes live in the
 * packages that throw them; the edges (the CLI's exit codes, the HTTP API's status codes) map
 * over this union, so a new kind that is not mapped fails to compile there.
 */
export type ChronologErrorType =
  // input that does not match its schema or contract: nothing was written
  | "validation"
  | "unknown_event_type"
  | "cron_schedule"
  | "template"
  | "invalid_stream_name"
  | "invalid_expected_revision"
  | "invalid_append"
  // stored history or storage this code cannot read (written by a newer version)
  | "unsupported_schema_version"
  | "unsupported_log_layout"
  // the log refused or could not make a write
  | "wrong_expected_revision"
  | "log_moved"
  | "log_closed"
  | "log_read_only"
  | "append_outcome_unknown"
  | "append_expired"
  | "log_unavailable"
  | "foreign_record"
  // a command that kept losing its compare-and-set to other writers
  | "conflict_retries_exhausted"
  // an operation refused for a reason a person can act on
  | "not_found"
  | "state";

/**
 * Typed errors. Each carries a literal `type` from `ChronologErrorType` and structured fields;
 * the edge (CLI, HTTP API) maps them to exit codes and status codes.
 */
export abstract class ChronologError extends Error {
  abstract readonly type: ChronologErrorType;
}

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `data.attempt` or `tasks[2].cron`. */
  readonly path: string;
  readonly message: string;
}

/** Input that does not match its schema: nothing was written. */
export class ValidationError extends ChronologError {
  readonly type = "validation" as const;
  constructor(
    readonly subject: string,
    readonly issues: readonly FieldIssue[],
  ) {
    super(`${subject}: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ")}`);
    this.name = "ValidationError";
  }
}

/** An event type that is not in the catalog. */
export class UnknownEventTypeError extends ChronologError {
  readonly type = "unknown_event_type" as const;
  constructor(readonly eventType: string) {
    super(`unknown event type "${eventType}"`);
    this.name = "UnknownEventTypeError";
  }
}

/** An event recorded at a schema version that this code cannot read or upcast. */
export class UnsupportedSchemaVersionError extends ChronologError {
  readonly type = "unsupported_schema_version" as const;
  constructor(
    readonly eventType: string,
    readonly version: number,
    readonly current: number,
  ) {
    super(`event "${eventType}" at schema version ${version} cannot be read (current version is ${current})`);
    this.name = "UnsupportedSchemaVersionError";
  }
}

export function zodIssues(error: {
  issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>;
}): FieldIssue[] {
  return error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
}

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** The `default` of a switch that covers every case of a union: a missing case fails to compile. */
export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`);
}
