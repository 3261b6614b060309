import { ChronologError, type ChronologErrorType } from "@chronolog/core";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { toJson } from "./state.js";

/**
 * HTTP statuses by typed error: the one place they are mapped, over the whole union (a kind of
 * error without a status fails to compile), as the CLI maps exit codes.
 */
export const HTTP_STATUS: Readonly<Record<ChronologErrorType, number>> = {
  validation: 400,
  unknown_event_type: 400,
  cron_schedule: 400,
  template: 400,
  invalid_stream_name: 400,
  invalid_expected_revision: 400,
  invalid_append: 400,
  wrong_expected_revision: 409,
  log_moved: 409,
  conflict_retries_exhausted: 409,
  not_found: 404,
  state: 422,
  unsupported_schema_version: 500,
  unsupported_log_layout: 500,
  log_read_only: 403,
  log_closed: 503,
  append_outcome_unknown: 503,
  append_expired: 503,
  log_unavailable: 503,
  foreign_record: 500,
};

const TITLES: Readonly<Record<number, string>> = {
  400: "Invalid input",
  401: "Not authenticated",
  403: "Forbidden",
  404: "Not found",
  409: "Conflict",
  413: "Body too large",
  415: "Unsupported media type",
  421: "Misdirected request",
  422: "Refused in this state",
  429: "Too many requests",
  500: "Internal error",
  503: "Unavailable",
};

/** An error raised at the HTTP edge itself (auth, media type, body size), with its status. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly fields: Record<string, unknown> = {},
    /** Headers the answer carries (Retry-After, say). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpProblem";
  }
}

/** A typed error's own fields (file, path, line, cycle, both revisions), JSON-safe. */
function fieldsOf(error: Error): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(error)) {
    if (k === "type" || k === "name" || k === "stack" || k === "message") continue;
    out[k] = v;
  }
  return JSON.parse(toJson(out));
}

/** The RFC 9457 problem document for an error, and its status. */
export function problemOf(error: unknown): { status: number; body: Record<string, unknown> } {
  if (error instanceof HttpProblem) {
    return {
      status: error.status,
      body: {
        type: `urn:chronolog:problem:${error.kind}`,
        title: TITLES[error.status] ?? "Error",
        status: error.status,
        detail: error.message,
        ...error.fields,
      },
    };
  }
  if (error instanceof ChronologError) {
    const status = HTTP_STATUS[error.type] ?? 500;
    const base = {
      type: `urn:chronolog:problem:${error.type}`,
      title: TITLES[status] ?? "Error",
      status,
      detail: error.message,
    };
    // Declaration errors keep every issue, each with its file, path and message.
    return { status, body: { ...base, ...fieldsOf(error) } };
  }
  if (error instanceof HTTPException) {
    // Hono's own refusals (a body that is not JSON, say): input errors, with its status.
    const status = error.status;
    return {
      status,
      body: {
        type: `urn:chronolog:problem:${status === 400 ? "validation" : "http"}`,
        title: TITLES[status] ?? "Error",
        status,
        detail: error.message,
      },
    };
  }
  return {
    status: 500,
    body: {
      type: "urn:chronolog:problem:internal",
      title: TITLES[500],
      status: 500,
      detail: error instanceof Error ? error.message : String(error),
    },
  };
}

/** The longest text a problem document echoes back: an excerpt of input is cut to this. */
export const EXCERPT_LIMIT = 300;

/** A string cut to EXCERPT_LIMIT characters, saying how much was left out. */
export function shortText(text: string, limit = EXCERPT_LIMIT): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}… (${text.length - limit} more characters)`;
}

/** Every string of a problem document cut short: input is never echoed back whole. */
function cutShort(value: unknown): unknown {
  if (typeof value === "string") return shortText(value);
  if (Array.isArray(value)) return value.map(cutShort);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutShort(v)]));
  return value;
}

export function problemResponse(c: Context, error: unknown): Response {
  const { status, body } = problemOf(error);
  const headers = error instanceof HttpProblem ? error.headers : {};
  return c.body(JSON.stringify(cutShort(body)), status as 400, {
    ...headers,
    "content-type": "application/problem+json",
  });
}
