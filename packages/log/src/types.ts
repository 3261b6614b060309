import type { DomainEvent, EventMetadataInput, RecordedMetadata } from "@chronolog/core";

/**
 * What an append expects of the stream's current state:
 * - `any`: no check;
 * - `no_stream`: the stream has no events;
 * - `exists`: the stream has at least one event;
 * - a bigint `n`: the stream's last event has revision `n` (revisions start at 0).
 */
export type ExpectedRevision = "any" | "no_stream" | "exists" | bigint;

/** A stream's current revision as observed: `no_stream` or the last event's revision. */
export type StreamRevision = "no_stream" | bigint;

/** An event a caller asks to append. Metadata fields not given are filled by the log. */
export interface NewEvent {
  readonly type: string;
  readonly data: unknown;
  readonly metadata?: Partial<EventMetadataInput>;
}

/** An event as stored, before its data is parsed or upcast. */
export interface StoredEvent {
  readonly streamId: string;
  /** The event's revision within its stream, from 0. */
  readonly revision: bigint;
  /** The event's position in the whole log: strictly increasing in commit order. */
  readonly position: bigint;
  readonly type: string;
  /** The JSON text of the data, exactly as stored (the hash covers these bytes). */
  readonly dataJson: string;
  readonly metadata: RecordedMetadata;
  /**
   * The data already parsed, when the engine still holds the object it was written from
   * (events this process appended). Never to be mutated.
   */
  readonly parsed?: unknown;
}

/** An event as read through the log: its data parsed and upcast to the current schema version. */
export type RecordedEvent = StoredEvent & DomainEvent;

/** One stream's part of an atomic multi-stream append. */
export interface StreamWrite {
  readonly streamId: string;
  readonly events: readonly NewEvent[];
  readonly expectedRevision: ExpectedRevision;
}

/**
 * A stream an atomic append expects at a revision without writing to it: the append is made only
 * if the stream is still there (else a WrongExpectedRevisionError naming it, and nothing is
 * written). A writer that decided on what it read of a stream it does not write (where a task
 * stood, whether an interval had an attempt) states it so, and a concurrent write there refuses
 * the append instead of passing unseen.
 */
export interface StreamCheck {
  readonly streamId: string;
  readonly expectedRevision: ExpectedRevision;
}

/** What appendMany takes beside its writes. */
export interface AppendManyOptions {
  /** See EventLog.appendMany and LogBackend.appendsAtHead. */
  readonly expectedHead?: bigint;
  /** Streams expected at a revision and not written (see StreamCheck). */
  readonly checks?: readonly StreamCheck[];
}

/**
 * One stream's part of an append, as a backend receives it. A write of no events is a check (a
 * StreamCheck): its expected revision is compared with the others, and it writes nothing and
 * makes no result. Checks come after every write of events.
 */
export interface PreparedWrite {
  readonly streamId: string;
  readonly events: readonly PreparedEvent[];
  readonly expected: ExpectedRevision;
}

export interface AppendResult {
  /** The revision of the last event appended: pass it as the next expected revision. */
  readonly nextExpectedRevision: bigint;
  /** The global position of the last event appended. */
  readonly position: bigint;
}

export interface ReadStreamOptions {
  /** First revision to read (inclusive). Default 0. */
  readonly fromRevision?: bigint;
  readonly maxCount?: number;
}

export interface ReadAllOptions {
  /** First global position to read (inclusive). Default: the start of the log. */
  readonly fromPosition?: bigint;
  readonly maxCount?: number;
}

/** An event prepared for storage by the log: validated, serialised, metadata filled. */
export interface PreparedEvent {
  readonly type: string;
  readonly dataJson: string;
  /** The validated data object `dataJson` was made from. */
  readonly data: unknown;
  readonly schemaVersion: number;
  readonly eventId: string;
  readonly actor: string;
  readonly causationId: string | null;
  readonly correlationId: string | null;
}

/**
 * What a storage engine implements. It owns its connections: callers never see a client,
 * a transaction or a socket. Validation, upcasting and subscriptions live above it in
 * {@link EventLog}, so they are the same for every engine.
 */
export interface LogBackend {
  readonly name: string;
  /** Appends atomically, or throws WrongExpectedRevisionError and writes nothing. */
  append(
    streamId: string,
    events: readonly PreparedEvent[],
    expected: ExpectedRevision,
  ): Promise<AppendResult>;
  /**
   * Appends to several streams atomically, every expected revision checked; one conflict and
   * nothing is written (the scheduler writes a success with the task's advance this way). Where
   * `appendsAtHead` is true, `expectedHead` makes the append also conditional on the log's last
   * event being at that position (else a LogMovedError, and nothing is written). The writes of
   * no events, last, are checks (see PreparedWrite): compared, never written, and given no
   * result (the results are those of the writes of events, in order).
   */
  appendMany(
    writes: readonly PreparedWrite[],
    options?: { readonly expectedHead?: bigint },
  ): Promise<AppendResult[]>;
  /** Whether appendMany takes `expectedHead`. */
  readonly appendsAtHead?: boolean;
  /**
   * Optional: how many streams one appendMany is made to take at most by a caller that splits a
   * large write (a declaration of thousands of tasks) into appends. Leave it out where an append
   * is bounded in bytes (a Kafka record, an EventStoreDB append): callers then split into
   * appends of `DEFAULT_STREAMS_PER_APPEND`.
   */
  readonly streamsPerAppend?: number;
  readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]>;
  readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]>;
  /**
   * Optional: reads what this client has already seen, without first making sure it has seen
   * everything written before the call (which `readAll` does, at the cost of a round trip on a
   * networked log). Subscriptions follow with it: `watch` wakes them when more arrives.
   */
  readAllSeen?(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]>;
  /** The stream's current revision. */
  streamRevision(streamId: string): Promise<StreamRevision>;
  /** The position of the last committed event, or -1n for an empty log. */
  headPosition(): Promise<bigint>;
  /**
   * Calls `listener` whenever new events may have been committed (by this process or, where
   * the engine can tell, another). Returns a function that stops the notifications.
   */
  watch(listener: () => void): () => void;
  close(): Promise<void>;
}
