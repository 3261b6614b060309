import {
  type AppendResult,
  revisionMatches,
  type StoredEvent,
  type StreamRevision,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import { BodyCache } from "./body-cache.js";
import { DedupeWindow } from "./dedupe-window.js";
import { LogIndex } from "./log-index.js";
import type { DecodedAppend } from "./record.js";

/**
 * How many decided appends each reader remembers by id, to recognise a copy of a record that
 * was sent twice (a send retried after its acknowledgement was lost).
 */
export const DEDUPE_WINDOW = 200_000;

/** What the log made of one append. */
export type Decision =
  /** Every write matched: the append is in the log, with these revisions and positions. */
  | { readonly kind: "accepted"; readonly id: string; readonly results: AppendResult[] }
  /** One write did not match its stream: the whole append is refused and changes nothing. */
  | { readonly kind: "refused"; readonly id: string; readonly error: WrongExpectedRevisionError }
  /**
   * The append was made (at offset `base`) before the dedupe window began, so an earlier
   * copy of it may have been forgotten: refused, since it cannot be told apart from a copy.
   */
  | { readonly kind: "too_old"; readonly id: string; readonly base: bigint; readonly offset: bigint }
  /** A copy of an append already decided: ignored. */
  | { readonly kind: "duplicate"; readonly id: string };

const skip = () => {};

/** The decider's state beside its index: what a checkpoint holds besides the index. */
export interface DeciderState {
  readonly next: bigint;
  /** append id -> offset of its record, oldest first. */
  readonly decided: ReadonlyArray<readonly [string, bigint]>;
  readonly dedupeFloor: bigint;
  readonly refused: number;
  readonly duplicates: number;
}

/**
 * The log as the partition's records make it, decided in offset order. It keeps the log's
 * index (LogIndex: where each stream's events are, which record holds which positions, the
 * hash chain's head) and the newest events whole (BodyCache), and makes each append's
 * compare-and-set against the streams as the records before it left them. It does no I/O and
 * reads no clock: given the same records in the same order, every decider holds the same log,
 * with the same positions, revisions and hashes, and makes the same decisions. That is what
 * lets every client of the topic decide for itself, with no owner and no lock.
 */
export class RecordDecider {
  private log = new LogIndex();
  /** The next offset to decide: every record below it is decided. */
  private next = 0n;
  /** append id -> offset of its record, for the last `dedupeWindow` appends decided. */
  private readonly decided: DedupeWindow;
  /** An append made (per its `base`) before this offset may have a forgotten copy: refused. */
  private dedupeFloor = 0n;
  /** Appends refused (either way) and copies ignored, of any writer. */
  private readonly counts = { refused: 0, duplicates: 0 };
  private readonly keep: (e: StoredEvent) => void;

  constructor(
    dedupeWindow: number = DEDUPE_WINDOW,
    /** Where the events this decider stores are kept whole, while they are new. */
    readonly cache: BodyCache = new BodyCache(),
  ) {
    this.keep = (e) => cache.put(e);
    this.decided = new DedupeWindow(dedupeWindow);
  }

  /** The index of the log as decided so far. */
  get index(): LogIndex {
    return this.log;
  }

  get eventCount(): number {
    return this.log.eventCount;
  }

  get streamCount(): number {
    return this.log.streamCount;
  }

  get lastHash(): string {
    return this.log.lastHash;
  }

  revision(streamId: string): StreamRevision {
    return this.log.revision(streamId);
  }

  headPosition(): bigint {
    return this.log.headPosition();
  }

  /** Everything but the index, as a checkpoint keeps it. */
  state(): DeciderState {
    return {
      next: this.next,
      decided: this.decided.entries(),
      dedupeFloor: this.dedupeFloor,
      refused: this.counts.refused,
      duplicates: this.counts.duplicates,
    };
  }

  /** Takes up where a checkpoint left off: its index and state. Only before the first record. */
  restore(index: LogIndex, state: DeciderState): void {
    if (this.next !== 0n) throw new Error("a decider is restored before it decides anything");
    this.log = index;
    this.next = state.next;
    if (this.decided.count > 0) throw new Error("a decider is restored before it decides anything");
    for (const [id, offset] of state.decided.slice(-this.decided.size)) this.decided.add(id, offset);
    this.dedupeFloor = state.dedupeFloor;
    this.counts.refused = state.refused;
    this.counts.duplicates = state.duplicates;
  }

  /** The next offset to decide. */
  get nextOffset(): bigint {
    return this.next;
  }

  get refused(): number {
    return this.counts.refused;
  }

  get duplicates(): number {
    return this.counts.duplicates;
  }

  /** Whether the record at `offset` is decided already (a record read again after a seek). */
  has(offset: bigint): boolean {
    return offset < this.next;
  }

  /**
   * Decides the appends of the record at `offset`, in order, each on its own, and moves past
   * the record. A record already decided changes nothing and yields no decisions. With `keep`
   * false, the events it stores are not put in the cache (they are read back when asked for).
   */
  decideRecord(offset: bigint, appends: readonly DecodedAppend[], keep = true): Decision[] {
    if (this.has(offset)) return [];
    this.log.beginRecord(offset);
    const decisions = appends.map((a) => {
      const d = this.decide(a, offset, keep ? this.keep : skip);
      this.log.decided(d.kind === "accepted");
      return d;
    });
    this.log.endRecord();
    this.next = offset + 1n;
    return decisions;
  }

  /**
   * Moves past offsets that hold no record to decide (a transaction's markers, the end of a
   * batch the reader was handed): everything below `offset` is decided.
   */
  advanceTo(offset: bigint): void {
    if (offset > this.next) this.next = offset;
  }

  /** The compare-and-set every reader makes the same way for the record at `offset`. */
  private decide(a: DecodedAppend, offset: bigint, keep: (e: StoredEvent) => void): Decision {
    if (this.decided.has(a.id)) {
      this.counts.duplicates += 1; // a copy of a record already decided
      return { kind: "duplicate", id: a.id };
    }
    const forgotten = this.decided.add(a.id, offset);
    if (forgotten !== null) this.dedupeFloor = forgotten + 1n;
    if (a.base < this.dedupeFloor) {
      this.counts.refused += 1;
      return { kind: "too_old", id: a.id, base: a.base, offset };
    }
    const local = new Map<string, StreamRevision>();
    for (const w of a.writes) {
      const actual = local.get(w.stream) ?? this.log.revision(w.stream);
      if (!revisionMatches(w.expected, actual)) {
        this.counts.refused += 1;
        return {
          kind: "refused",
          id: a.id,
          error: new WrongExpectedRevisionError(w.stream, w.expected, actual),
        };
      }
      // (A write of no events, a check, leaves its stream as it is.)
      if (w.events.length > 0)
        local.set(w.stream, (actual === "no_stream" ? -1n : actual) + BigInt(w.events.length));
    }
    const results: AppendResult[] = [];
    for (const w of a.writes) {
      const result = this.log.store(w.stream, w.events, a.recordedAt, keep);
      if (result) results.push(result);
    }
    return { kind: "accepted", id: a.id, results };
  }
}
