import {
  type AppendResult,
  ChainedEvents,
  revisionMatches,
  type StreamRevision,
  WrongExpectedRevisionError,
} from "@chronolog/log";
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

/**
 * The log as the partition's records make it, decided in offset order. It holds the events
 * (by position and by stream) and the hash chain, and makes each append's compare-and-set
 * against the streams as the records before it left them. It does no I/O and reads no clock:
 * given the same records in the same order, every decider holds the same log, with the same
 * positions, revisions and hashes, and makes the same decisions. That is what lets every
 * client of the topic decide for itself, with no owner and no lock.
 */
export class RecordDecider extends ChainedEvents {
  /** The next offset to decide: every record below it is decided. */
  private next = 0n;
  /** append id -> offset of its record, for the last `dedupeWindow` appends decided. */
  private readonly decided = new Map<string, bigint>();
  /** An append made (per its `base`) before this offset may have a forgotten copy: refused. */
  private dedupeFloor = 0n;
  /** Appends refused (either way) and copies ignored, of any writer. */
  private readonly counts = { refused: 0, duplicates: 0 };

  constructor(private readonly dedupeWindow: number = DEDUPE_WINDOW) {
    super();
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
   * the record. A record already decided changes nothing and yields no decisions.
   */
  decideRecord(offset: bigint, appends: readonly DecodedAppend[]): Decision[] {
    if (this.has(offset)) return [];
    const decisions = appends.map((a) => this.decide(a, offset));
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
  private decide(a: DecodedAppend, offset: bigint): Decision {
    if (this.decided.has(a.id)) {
      this.counts.duplicates += 1; // a copy of a record already decided
      return { kind: "duplicate", id: a.id };
    }
    this.decided.set(a.id, offset);
    if (this.decided.size > this.dedupeWindow) {
      const [oldest, at] = this.decided.entries().next().value as [string, bigint];
      this.decided.delete(oldest);
      this.dedupeFloor = at + 1n;
    }
    if (a.base < this.dedupeFloor) {
      this.counts.refused += 1;
      return { kind: "too_old", id: a.id, base: a.base, offset };
    }
    const local = new Map<string, StreamRevision>();
    for (const w of a.writes) {
      const actual = local.get(w.stream) ?? this.revision(w.stream);
      if (!revisionMatches(w.expected, actual)) {
        this.counts.refused += 1;
        return {
          kind: "refused",
          id: a.id,
          error: new WrongExpectedRevisionError(w.stream, w.expected, actual),
        };
      }
      local.set(w.stream, (actual === "no_stream" ? -1n : actual) + BigInt(w.events.length));
    }
    const results: AppendResult[] = [];
    for (const w of a.writes) {
      const result = this.store(w.stream, w.events, a.recordedAt);
      if (result) results.push(result);
    }
    return { kind: "accepted", id: a.id, results };
  }
}
