/**
 * Typed errors. Each carries a literal `type` and structured fields; the edge (CLI, HTTP API)
 * maps them to exit codes and status codes.
 */
export abstract class ChronologError extends Error {
  abstract readonly type: string;
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
