import {
  currentSchemaVersion,
  type EventMetadataInput,
  eventMetadataInput,
  isEventType,
  isValidStreamName,
  UnknownEventTypeError,
  ValidationError,
  validateEventData,
  zodIssues,
} from "@chronolog/core";
import { InvalidAppendError, InvalidExpectedRevisionError, InvalidStreamNameError } from "./errors.js";
import type {
  ExpectedRevision,
  NewEvent,
  PreparedEvent,
  PreparedWrite,
  StreamRevision,
  StreamWrite,
} from "./types.js";

export const MAX_EVENTS_PER_APPEND = 10_000;
export const MAX_EVENT_BYTES = 1_048_576;

export function checkStreamName(streamId: unknown): asserts streamId is string {
  if (!isValidStreamName(streamId)) throw new InvalidStreamNameError(streamId);
}

/** Whether a stream at `actual` satisfies `expected`: the compare-and-set rule every backend applies. */
export function revisionMatches(expected: ExpectedRevision, actual: StreamRevision): boolean {
  return (
    expected === "any" ||
    (expected === "no_stream" && actual === "no_stream") ||
    (expected === "exists" && actual !== "no_stream") ||
    (typeof expected === "bigint" && actual === expected)
  );
}

export function checkExpectedRevision(value: unknown): asserts value is ExpectedRevision {
  if (value === "any" || value === "no_stream" || value === "exists") return;
  if (typeof value === "bigint" && value >= 0n) return;
  throw new InvalidExpectedRevisionError(value);
}

export interface PrepareContext {
  readonly actor: string;
  readonly newId: () => string;
}

/**
 * Validates a whole append before anything is written: every event's type, data and metadata.
 * One bad event rejects the append.
 */
export function prepareEvents(
  events: readonly NewEvent[],
  ctx: PrepareContext,
  /** The stream they go to, named in a refusal when given (one of several in a write). */
  streamId?: string,
): PreparedEvent[] {
  const where = (index: number, type: string) =>
    `${streamId !== undefined ? `${streamId}: ` : ""}events[${index}] (${type})`;
  if (!Array.isArray(events) || events.length === 0) {
    throw new InvalidAppendError("an append needs at least one event");
  }
  if (events.length > MAX_EVENTS_PER_APPEND) {
    throw new InvalidAppendError(
      `an append takes at most ${MAX_EVENTS_PER_APPEND} events, got ${events.length}`,
    );
  }
  return events.map((event, index) => {
    if (typeof event !== "object" || event === null) {
      throw new InvalidAppendError(`events[${index}] is not an object`);
    }
    if (!isEventType(event.type)) throw new UnknownEventTypeError(String(event.type));
    let data: unknown;
    try {
      data = validateEventData(event.type, event.data);
    } catch (error) {
      if (error instanceof ValidationError) {
        throw new ValidationError(
          where(index, event.type),
          error.issues.map((i) => ({ path: i.path ? `data.${i.path}` : "data", message: i.message })),
        );
      }
      throw error;
    }
    const meta =
      event.metadata === undefined
        ? defaultMetadata(ctx)
        : parseMetadata(event.metadata, ctx, index, event.type);
    const dataJson = JSON.stringify(data);
    if (dataJson.length > MAX_EVENT_BYTES) {
      throw new InvalidAppendError(
        `${where(index, event.type)}: data is larger than ${MAX_EVENT_BYTES} bytes (${dataJson.length})`,
      );
    }
    return {
      type: event.type,
      dataJson,
      data,
      schemaVersion: currentSchemaVersion(event.type),
      eventId: meta.eventId,
      actor: meta.actor,
      causationId: meta.causationId,
      correlationId: meta.correlationId,
    };
  });
}

interface Metadata {
  eventId: string;
  actor: string;
  causationId: string | null;
  correlationId: string | null;
}

/** Metadata the log makes itself needs no check (the hot path of the scheduler). */
function defaultMetadata(ctx: PrepareContext): Metadata {
  return { eventId: ctx.newId(), actor: ctx.actor, causationId: null, correlationId: null };
}

function parseMetadata(
  given: Partial<EventMetadataInput>,
  ctx: PrepareContext,
  index: number,
  type: string,
): Metadata {
  const meta = eventMetadataInput.safeParse({
    eventId: given.eventId ?? ctx.newId(),
    actor: given.actor ?? ctx.actor,
    causationId: given.causationId ?? null,
    correlationId: given.correlationId ?? null,
  });
  if (!meta.success) {
    throw new ValidationError(
      `events[${index}] (${type})`,
      zodIssues(meta.error).map((i) => ({ path: `metadata.${i.path}`, message: i.message })),
    );
  }
  return meta.data;
}

/**
 * Checks a multi-stream write whole and prepares its events: each stream's name (named once),
 * its expected revision, each event's type, data and size. One bad write refuses them all.
 */
export function prepareWrites(writes: readonly StreamWrite[], ctx: PrepareContext): PreparedWrite[] {
  if (!Array.isArray(writes) || writes.length === 0)
    throw new InvalidAppendError("appendMany needs at least one write");
  const seen = new Set<string>();
  return writes.map((w) => {
    checkStreamName(w.streamId);
    if (seen.has(w.streamId)) throw new InvalidAppendError(`appendMany names stream ${w.streamId} twice`);
    seen.add(w.streamId);
    checkExpectedRevision(w.expectedRevision);
    return {
      streamId: w.streamId,
      events: prepareEvents(w.events, ctx, w.streamId),
      expected: w.expectedRevision,
    };
  });
}

/**
 * The checks EventLog.prepare makes (prepareWrites), for a caller with no log at hand (a
 * declaration checked, not written).
 */
export function checkWrites(writes: readonly StreamWrite[]): void {
  prepareWrites(writes, { actor: "check", newId: () => "check" });
}
