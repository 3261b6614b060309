import type { AppendResult } from "@chronolog/log";

/**
 * Where the log will stand once every append the scheduler has queued is made, if nothing else
 * is written in between: known from a head read with the projection caught up to it (a success
 * whose children are decided at it), then moved on by each append of the chain queued after it.
 *
 * A success starts its children only if the log is at the head they were decided at
 * (`expectedHead`). Decided at the head last committed, every success but the first of a group
 * commit was refused, since the appends queued ahead of it move the log on. Decided at the
 * chain's head, it is made if the log moved only by the chain's appends, and what those change
 * is known to the decision already: a success's children and a pass's intents are held in flight
 * (not startable) before they are queued, their run slots reserved, and a parent's advance only
 * opens a gate that was shut (a child it would have let start is left to the pass). Any other
 * append (this process's other writes, or another process's) is not in the chain: it moves the
 * log where the chain does not expect, the next append decided at the chain's head is refused
 * as before, and the chain ends; the next success reads the head again.
 *
 * An append of the chain made elsewhere than expected, refused, or failed, ends the chain too,
 * if it is still the chain that append was queued on.
 */
export class AppendChain {
  private tail: bigint | null = null;
  private generation = 0;

  /** The head the next append will find, if known. */
  get head(): bigint | null {
    return this.tail;
  }

  /**
   * An append of `events` events was queued, decided at `head` (null: not at a head of its
   * own; it moves the chain on, if there is one). Returns what to tell once it is made (where
   * its last event is) or not (null).
   */
  queued(head: bigint | null, events: number): (end: bigint | null) => void {
    const start = head ?? this.tail;
    if (start === null) return ignore;
    const end = start + BigInt(events);
    this.tail = end;
    const generation = this.generation;
    return (made) => {
      if (made !== end && generation === this.generation) this.end();
    };
  }

  /** Forgets the head: the next success reads it. */
  end(): void {
    this.tail = null;
    this.generation += 1;
  }
}

const ignore = (): void => {};

/** The append, with `done` told where its last event is (null: it was not made). */
export function followed(
  appended: Promise<AppendResult[]>,
  done: (end: bigint | null) => void,
): Promise<AppendResult[]> {
  if (done === ignore) return appended;
  return appended.then(
    (results) => {
      let end: bigint | null = null;
      for (const r of results) if (end === null || r.position > end) end = r.position;
      done(end);
      return results;
    },
    (error: unknown) => {
      done(null);
      throw error;
    },
  );
}
