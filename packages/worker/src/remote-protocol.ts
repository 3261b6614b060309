/**
 * The remote worker protocol, version 1: what a worker on another host and a scheduler's HTTP
 * API say to each other (docs/remote-workers.md describes every message). Plain HTTP/1.1:
 *
 *   POST   /api/v1/workers                              register -> RegisterAnswer
 *   GET    /api/v1/workers/{id}/commands                WorkerCommand batches, as Server-Sent Events
 *   POST   /api/v1/workers/{id}/reports                 a batch of WorkerReport
 *   PUT    /api/v1/workers/{id}/attempts/{token}/output?offset=N   a chunk of an attempt's output
 *   DELETE /api/v1/workers/{id}                         goodbye
 *
 * Every request carries `Authorization: Bearer <token>` (a `work` token, or an admin's); every
 * request after the registration carries the session it was given in `Chronolog-Session`.
 */

import type { WorkerCommand, WorkerReport } from "./protocol.js";

/** The version this build speaks; a scheduler refuses a worker that speaks another, and back. */
export const REMOTE_PROTOCOL_VERSION = 1;

/** The header that names a registration's session on every later request. */
export const SESSION_HEADER = "chronolog-session";

/** Largest chunk of output one request carries. */
export const MAX_OUTPUT_CHUNK = 256 * 1024;

/**
 * Most output an attempt's end may carry inline (`outputRest`) instead of a last upload: most
 * attempts print a few lines, and their end then costs one request, not two.
 */
export const INLINE_OUTPUT_MAX = 16 * 1024;

/** Most reports in one batch. */
export const MAX_REPORT_BATCH = 1000;

/** `POST /workers`: who the worker is, what it serves, and the attempts it still runs. */
export interface RegisterRequest {
  readonly protocol: number;
  /** Letters, digits, `_`, `.`, `:` and `-`, at most 128; chosen by the worker (default: its host name). */
  readonly id: string;
  readonly host: string;
  readonly queues: readonly string[];
  /** Most attempts it runs at once. */
  readonly capacity: number;
  /** Its build, e.g. `chronolog 0.1.0`. */
  readonly version: string;
  /** Dispatch tokens of the attempts it still runs (after a reconnect), or holds finished, unreported. */
  readonly running: readonly string[];
}

export interface RegisterAnswer {
  readonly protocol: number;
  /** Sent in the `Chronolog-Session` header of every later request of this registration. */
  readonly session: string;
  /** Who its reports are written as: `worker:<id>@<host>`. */
  readonly actor: string;
  /** Of `running`: the attempts still current, adopted (report them as usual). */
  readonly adopted: readonly string[];
  /** Of `running`: the attempts no longer current: stop them, report nothing more of them. */
  readonly stop: readonly string[];
  /** Post a (possibly empty) batch of reports at least this often: silence this long... */
  readonly keepaliveMs: number;
  /** ...times about four, and the scheduler drops the worker. */
  readonly silenceMs: number;
  /** The most of one attempt's output the scheduler keeps (its `--output-max-bytes`). */
  readonly outputMaxBytes: number;
  readonly maxOutputChunk: number;
  readonly maxReportBatch: number;
  /**
   * Most bytes of output an end report may carry inline (`outputRest`); absent or 0 from a
   * scheduler that takes none: every byte is then uploaded.
   */
  readonly inlineOutputMax?: number;
  /** The scheduler's clock as it answered (epoch ms): see CommandsEvent's `at`. */
  readonly now?: number;
}

/** One `commands` event of the command stream (its `data`). */
export interface CommandsEvent {
  readonly messages: readonly WorkerCommand[];
  /**
   * The scheduler's clock (epoch ms) when the oldest of these commands was queued for the
   * stream. Against the scheduler's clock as its latest answers give it (`now`), the worker
   * knows how long a command took to come at the least; an idempotent `run` that came a quarter
   * of its lease late or more runs only once the scheduler has accepted its `started` report (a
   * stream held up by a cut link delivers its commands when the link is back, and the scheduler
   * may have given the attempt up and its retry to another worker by then). Absent from a
   * scheduler that does not stamp its batches.
   */
  readonly at?: number;
}

/** `POST /workers/{id}/reports`. */
export interface ReportsRequest {
  readonly messages: readonly WorkerReport[];
}

/** A report the scheduler refused, and why. */
export interface RefusedReport {
  readonly kind: string;
  readonly token: string;
  readonly reason: string;
}

export interface ReportsAnswer {
  readonly accepted: number;
  readonly refused: readonly RefusedReport[];
  /** The scheduler's clock as it answered (epoch ms): see CommandsEvent's `at`. */
  readonly now?: number;
}
