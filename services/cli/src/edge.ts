import { ChronologError } from "@chronolog/core";

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

/** Exit codes by typed error: the one place they are mapped. */
const EXIT_CODES: Record<string, number> = {
  validation: 2,
  unknown_event_type: 2,
  invalid_stream_name: 2,
  invalid_expected_revision: 2,
  invalid_append: 2,
  template: 2,
  declaration: 2,
  wrong_expected_revision: 3,
  unsupported_schema_version: 4,
};

export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof ChronologError) return EXIT_CODES[error.type] ?? 1;
  return 1;
}

export function messageOf(error: unknown): string {
  if (error instanceof ChronologError) return `${error.type}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** JSON with bigints as strings. */
export function toJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v), indent);
}
