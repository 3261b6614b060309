import { ChronologError } from "@chronolog/core";
import type { ExpectedRevision, StreamRevision } from "./types.js";

/** Compare-and-set failed: the stream is not at the revision the writer observed. */
export class WrongExpectedRevisionError extends ChronologError {
  readonly type = "wrong_expected_revision" as const;
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: StreamRevision,
  ) {
    super(`stream "${streamId}": expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = "WrongExpectedRevisionError";
  }
}

/** An append made on condition that nothing was written since `expected` found the log moved on. */
export class LogMovedError extends ChronologError {
  readonly type = "log_moved" as const;
  constructor(
    readonly expected: bigint,
    readonly actual: bigint,
  ) {
    super(`the log has moved past position ${expected} (its last event is at ${actual})`);
    this.name = "LogMovedError";
  }
}

export class InvalidStreamNameError extends ChronologError {
  readonly type = "invalid_stream_name" as const;
  constructor(readonly streamId: unknown) {
    super(
      `invalid stream name ${JSON.stringify(String(streamId))}: expected "category-id" (a lower-case category, a dash, then printable ASCII without spaces, at most 512 characters)`,
    );
    this.name = "InvalidStreamNameError";
  }
}

export class InvalidExpectedRevisionError extends ChronologError {
  readonly type = "invalid_expected_revision" as const;
  constructor(readonly value: unknown) {
    super(
      `invalid expected revision ${typeof value === "bigint" ? `${value}n` : (JSON.stringify(value) ?? String(value))} (${typeof value}): expected "any", "no_stream", "exists" or a non-negative bigint`,
    );
    this.name = "InvalidExpectedRevisionError";
  }
}

export class InvalidAppendError extends ChronologError {
  readonly type = "invalid_append" as const;
  constructor(message: string) {
    super(message);
    this.name = "InvalidAppendError";
  }
}

/** The log was closed while an operation was pending or after it was closed. */
export class LogClosedError extends ChronologError {
  readonly type = "log_closed" as const;
  constructor() {
    super("the log is closed");
    this.name = "LogClosedError";
  }
}

/** A write to a log opened read-only. */
export class LogReadOnlyError extends ChronologError {
  readonly type = "log_read_only" as const;
  constructor(readonly where: string) {
    super(`${where} is open read-only`);
    this.name = "LogReadOnlyError";
  }
}

/** A log kept in a layout this code cannot use (a newer file version, a topic of several partitions). */
export class UnsupportedLogLayoutError extends ChronologError {
  readonly type = "unsupported_log_layout" as const;
  constructor(
    readonly where: string,
    readonly detail: string,
  ) {
    super(`${where}: ${detail}`);
    this.name = "UnsupportedLogLayoutError";
  }
}

/** A network log (or its group) did not answer in time: nothing is known to have changed. */
export class LogUnavailableError extends ChronologError {
  readonly type = "log_unavailable" as const;
  constructor(message: string) {
    super(message);
    this.name = "LogUnavailableError";
  }
}

/**
 * An append that reached the log too long after it was made to rule out an earlier copy of it:
 * it was not applied (it is certainly not in the log), and may be made again.
 */
export class AppendExpiredError extends ChronologError {
  readonly type = "append_expired" as const;
  constructor(message: string) {
    super(message);
    this.name = "AppendExpiredError";
  }
}

/**
 * A network log could not confirm an append (its brokers did not answer in time, the producer
 * failed): the append may yet appear in the log, or may never. A writer must read before it
 * decides again; it must not assume the append was lost.
 */
export class AppendOutcomeUnknownError extends ChronologError {
  readonly type = "append_outcome_unknown" as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AppendOutcomeUnknownError";
  }
}

/** The tamper-evident chain does not hold at `position`. */
export interface ChainBreak {
  readonly position: bigint;
  readonly reason: string;
}
