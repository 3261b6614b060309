import { upcastEventData } from "@chronolog/core";
import { type ChainBreak, InvalidAppendError, LogClosedError } from "./errors.js";
import { GENESIS_HASH, hashStored } from "./hash.js";
import { randomId } from "./ids.js";
import {
  type EventHandler,
  type SubscribeOptions,
  type Subscription,
  startSubscription,
} from "./subscription.js";
import type {
  AppendManyOptions,
  AppendResult,
  ExpectedRevision,
  LogBackend,
  NewEvent,
  PreparedEvent,
  PreparedWrite,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StoredEvent,
  StreamCheck,
  StreamRevision,
  StreamWrite,
} from "./types.js";
import { checkExpectedRevision, checkStreamName, prepareEvents, prepareWrites } from "./validate.js";

export interface EventLogOptions {
  /** Default actor for events that name none, e.g. `cli:alice` or `scheduler:host:pid`. */
  readonly actor?: string;
  readonly newId?: () => string;
}

export interface AppendOptions {
  readonly expectedRevision: ExpectedRevision;
  /** Streams expected at a revision and not written (see StreamCheck). */
  readonly checks?: readonly StreamCheck[];
}

export interface VerifyResult {
  readonly checked: number;
  readonly headPosition: bigint;
  readonly break: ChainBreak | null;
}

const DEFAULT_PAGE = 1000;

/** Parses and upcasts a stored event; the one place read paths turn bytes into domain events. */
export function decodeStoredEvent(stored: StoredEvent): RecordedEvent {
  const data = stored.parsed !== undefined ? stored.parsed : JSON.parse(stored.dataJson);
  const domain = upcastEventData(stored.type, stored.metadata.schemaVersion, data);
  return {
    streamId: stored.streamId,
    revision: stored.revision,
    position: stored.position,
    dataJson: stored.dataJson,
    metadata: stored.metadata,
    type: domain.type,
    data: domain.data,
  } as RecordedEvent;
}

/**
 * The log as every part of Chronolog sees it, the same over every backend: validates before
 * anything is written, upcasts on read, and delivers subscriptions.
 */
/**
 * Streams in one appendMany of a write split into several, where the backend sets no bound of
 * its own: a Kafka record holds about a megabyte, and 200 task declarations fit in it.
 */
export const DEFAULT_STREAMS_PER_APPEND = 200;

/** Writes checked whole by EventLog.prepare, to be appended (all, or slices) by appendPrepared. */
export type PreparedWrites = readonly PreparedWrite[];

export class EventLog {
  readonly actor: string;
  private readonly newId: () => string;
  private closed = false;

  constructor(
    readonly backend: LogBackend,
    options: EventLogOptions = {},
  ) {
    this.actor = options.actor ?? "unknown";
    this.newId = options.newId ?? randomId;
  }

  /**
   * Appends `events` to `streamId` atomically if the stream is at `expectedRevision` (and each
   * of `checks` is at its own, see StreamCheck).
   * Throws WrongExpectedRevisionError on conflict, a validation error on bad input; in both
   * cases nothing is written.
   */
  async append(streamId: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    this.ensureOpen();
    checkStreamName(streamId);
    this.admit?.([{ streamId, events }]);
    if (typeof options !== "object" || options === null) checkExpectedRevision(undefined);
    checkExpectedRevision(options.expectedRevision);
    const prepared = prepareEvents(events, { actor: this.actor, newId: this.newId });
    const checks = options.checks;
    if (checks === undefined || checks.length === 0)
      return this.timed(() => this.backend.append(streamId, prepared, options.expectedRevision));
    const all = preparedChecks([{ streamId, events: prepared, expected: options.expectedRevision }], checks);
    return this.timed(() => this.backend.appendMany(all).then(first));
  }

  private readonly appendListeners = new Set<(ms: number) => void>();

  /**
   * Hears how long each append of this log (and of its views) took, in milliseconds, once it is
   * durable; failed appends are not heard. Returns how to stop.
   */
  onAppend(listener: (ms: number) => void): () => void {
    const root = this.owner ?? this;
    root.appendListeners.add(listener);
    return () => root.appendListeners.delete(listener);
  }

  private async timed<T>(append: () => Promise<T>): Promise<T> {
    const listeners = (this.owner ?? this).appendListeners;
    if (listeners.size === 0) return append();
    const started = performance.now();
    const result = await append();
    const ms = performance.now() - started;
    for (const l of listeners) l(ms);
    return result;
  }

  /**
   * How many streams a caller that splits a large write puts in one appendMany: the backend's
   * own bound, else DEFAULT_STREAMS_PER_APPEND (small enough for an append bounded in bytes).
   */
  get streamsPerAppend(): number {
    return this.backend.streamsPerAppend ?? DEFAULT_STREAMS_PER_APPEND;
  }

  /** Whether appendMany can be made conditional on the log's head (`expectedHead`). */
  get supportsExpectedHead(): boolean {
    return this.backend.appendsAtHead === true;
  }

  /**
   * Appends to several streams atomically: every expected revision is checked, and on one
   * conflict (a WrongExpectedRevisionError naming that stream) nothing is written anywhere.
   * With `expectedHead` (see supportsExpectedHead), the append is also refused, with a
   * LogMovedError, unless the log's last event is at that position: nothing was written since
   * the writer's view of the log, by anyone. Each of `checks` is a stream expected at a revision
   * and not written (see StreamCheck): one that moved refuses the append as a write's conflict
   * does.
   */
  async appendMany(writes: readonly StreamWrite[], options: AppendManyOptions = {}): Promise<AppendResult[]> {
    return this.appendPrepared(this.prepare(writes), options);
  }

  /**
   * Every check appendMany makes of `writes` (the caller's limits, each stream's name and
   * expected revision, each event's type, data and size), made now and nothing written: a
   * write split into several appends is checked whole before its first is made. The result is
   * appended with appendPrepared, in one append or in slices.
   */
  prepare(writes: readonly StreamWrite[]): PreparedWrites {
    if (Array.isArray(writes)) this.admit?.(writes);
    const prepared = prepareWrites(writes, { actor: this.actor, newId: this.newId });
    for (const w of prepared) this.prepared.add(w);
    return prepared;
  }

  /** The writes this log's `prepare` made: appendPrepared takes no other (none escapes `admit`). */
  private readonly prepared = new WeakSet<PreparedWrite>();

  /** Appends writes `prepare` checked (all of them, or a slice), as appendMany does. */
  async appendPrepared(prepared: PreparedWrites, options: AppendManyOptions = {}): Promise<AppendResult[]> {
    this.ensureOpen();
    if (prepared.length === 0) throw new InvalidAppendError("appendMany needs at least one write");
    for (const w of prepared)
      if (!this.prepared.has(w))
        throw new InvalidAppendError(`the write to ${w.streamId} was not made by this log's prepare`);
    const { expectedHead } = options;
    if (expectedHead !== undefined) {
      if (!this.supportsExpectedHead)
        throw new InvalidAppendError(
          `the ${this.backend.name} log cannot make an append conditional on its head`,
        );
      if (typeof expectedHead !== "bigint" || expectedHead < -1n)
        throw new InvalidAppendError(
          `invalid expected head ${String(expectedHead)}: expected a bigint of -1 or more`,
        );
    }
    const appendMany = this.backend.appendMany.bind(this.backend);
    const checks = options.checks;
    const at = expectedHead === undefined ? {} : { expectedHead };
    // (A backend gives results for the writes of events only: the checks, last, make none.)
    const all = checks === undefined || checks.length === 0 ? prepared : preparedChecks(prepared, checks);
    return this.timed(() => appendMany(all, at));
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.ensureOpen();
    checkStreamName(streamId);
    const stored = await this.backend.readStream(
      streamId,
      options.fromRevision ?? 0n,
      options.maxCount ?? Number.MAX_SAFE_INTEGER,
    );
    return stored.map(decodeStoredEvent);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.ensureOpen();
    const stored = await this.backend.readAll(options.fromPosition ?? 0n, options.maxCount ?? DEFAULT_PAGE);
    return stored.map(decodeStoredEvent);
  }

  /** Raw stored events, not parsed: for auditing and for `log read --raw`. */
  async readAllStored(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    this.ensureOpen();
    return this.backend.readAll(options.fromPosition ?? 0n, options.maxCount ?? DEFAULT_PAGE);
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    this.ensureOpen();
    checkStreamName(streamId);
    return this.backend.streamRevision(streamId);
  }

  async headPosition(): Promise<bigint> {
    this.ensureOpen();
    return this.backend.headPosition();
  }

  /**
   * Delivers every event from `fromPosition` on: first what is there, then each new commit.
   * The catch-up reaches at least the head as of the call; following reads take what the
   * backend has seen, since it wakes the subscription when more arrives.
   */
  subscribe(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    this.ensureOpen();
    const read = (this.backend.readAllSeen ?? this.backend.readAll).bind(this.backend);
    return startSubscription(
      {
        readAll: async (from, max) => (await read(from, max)).map(decodeStoredEvent),
        headPosition: () => this.backend.headPosition(),
        watch: (listener) => this.backend.watch(listener),
      },
      handler,
      options,
    );
  }

  /** Walks the whole log and reports the first position where the hash chain breaks. */
  async verify(onProgress?: (checked: number) => void): Promise<VerifyResult> {
    this.ensureOpen();
    let prev = GENESIS_HASH;
    let checked = 0;
    let from = 0n;
    let head = -1n;
    for (;;) {
      const page = await this.backend.readAll(from, 5000);
      if (page.length === 0) break;
      for (const e of page) {
        const found = (reason: string): VerifyResult => ({
          checked,
          headPosition: e.position,
          break: { position: e.position, reason },
        });
        if (e.metadata.prevHash !== prev) return found("prev_hash does not match the previous event's hash");
        const recomputed = hashStored(prev, e);
        if (recomputed !== e.metadata.hash) return found("the event's content does not match its hash");
        prev = e.metadata.hash;
        head = e.position;
        checked += 1;
      }
      from = (page.at(-1) as StoredEvent).position + 1n;
      onProgress?.(checked);
    }
    return { checked, headPosition: head, break: null };
  }

  /**
   * The same log, writing as another actor (an HTTP API's caller, say). It shares this log's
   * backend and its closing: close this log, not the view. `admit`, when given, sees every
   * write of the view before anything of it is done, and refuses one by throwing (a caller's
   * limits: what it may write to), so that no path of a write escapes them.
   */
  as(
    actor: string,
    admit?: (writes: ReadonlyArray<Pick<StreamWrite, "streamId" | "events">>) => void,
  ): EventLog {
    const view = new EventLog(this.backend, { actor, newId: this.newId });
    view.owner = this;
    if (admit) view.admit = admit;
    return view;
  }

  private owner: EventLog | null = null;
  private admit: ((writes: ReadonlyArray<Pick<StreamWrite, "streamId" | "events">>) => void) | undefined;

  async close(): Promise<void> {
    if (this.owner) return;
    if (this.closed) return;
    this.closed = true;
    await this.backend.close();
  }

  private ensureOpen(): void {
    if (this.closed || this.owner?.closed) throw new LogClosedError();
  }
}

/**
 * `prepared`, then `checks` as the writes of no events a backend compares and does not write
 * (see PreparedWrite), each stream named once and none that the append writes.
 */
function preparedChecks(prepared: PreparedWrites, checks: readonly StreamCheck[]): PreparedWrite[] {
  if (!Array.isArray(checks)) throw new InvalidAppendError("checks must be a list of streams");
  const all: PreparedWrite[] = prepared.slice();
  // (A dispatch checks one stream beside its one write; an operator's append, thousands.)
  const named = all.length + checks.length > 8 ? new Set(all.map((w) => w.streamId)) : null;
  for (const c of checks as readonly StreamCheck[]) {
    checkStreamName(c?.streamId);
    if (named ? named.has(c.streamId) : all.some((w) => w.streamId === c.streamId))
      throw new InvalidAppendError(`appendMany names stream ${c.streamId} twice (a write and a check)`);
    named?.add(c.streamId);
    checkExpectedRevision(c.expectedRevision);
    all.push({ streamId: c.streamId, events: NO_EVENTS, expected: c.expectedRevision });
  }
  return all;
}

const NO_EVENTS: readonly PreparedEvent[] = Object.freeze([]);

const first = (results: AppendResult[]): AppendResult => results[0] as AppendResult;
