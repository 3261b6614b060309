import {
  connectionStream,
  type DomainEvent,
  holdsConnectionSlot,
  type InstanceState,
  isTerminal,
} from "@chronolog/core";
import type { EventLog, StreamCheck } from "@chronolog/log";
import type { Agenda } from "../agenda.js";
import { setIn } from "../sets.js";

/**
 * The contended counter of each connection's `maxParallelism`: which attempts hold a slot
 * (queued or running, as the projection shows them), which dispatches are being written and not
 * yet shown (reserved), and the slot takes this scheduler writes. A take is a compare-and-set on
 * the connection's stream in the same atomic append as the intent, so that several schedulers
 * sharing a log never give out more slots than the connection has.
 */
export class ConnectionSlots {
  /** connection -> instance streams holding a slot (queued or running). */
  private readonly load = new Map<string, Set<string>>();
  /** connection -> dispatches written or being written but not yet seen in the projection. */
  private readonly reserved = new Map<string, Set<string>>();
  /** connection -> the revision its stream has after the last slot take this scheduler wrote. */
  private readonly takes = new Map<string, bigint>();
  /** connection -> the take being written (takes on one connection are written one at a time). */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly log: EventLog,
    /** A slot of a connection may have come free: what waits for it (its name) is woken. */
    private readonly agenda: Pick<Agenda, "wakeWaiters">,
  ) {}

  /** Slots in use: attempts holding one, and dispatches reserved. */
  inUse(connection: string): number {
    return (this.load.get(connection)?.size ?? 0) + (this.reserved.get(connection)?.size ?? 0);
  }

  /** Holds a slot for a dispatch being written (until the projection shows it, or it fails). */
  reserve(connection: string, stream: string): void {
    setIn(this.reserved, connection).add(stream);
  }

  /** Gives a reserved slot back; `wake` tells its waiters. */
  release(connection: string, stream: string, wake = true): void {
    const reserved = this.reserved.get(connection);
    reserved?.delete(stream);
    if (reserved?.size === 0) this.reserved.delete(connection);
    if (wake) this.agenda.wakeWaiters(connection);
  }

  /** Counts an instance found in the projection at start. */
  track(inst: InstanceState): void {
    if (!holdsConnectionSlot(inst) || inst.connection === null) return;
    setIn(this.load, inst.connection).add(inst.stream);
  }

  /** The projection applied an event of `stream`: move its slot from reserved to load, or free it. */
  update(before: InstanceState | undefined, after: InstanceState | undefined, stream: string): void {
    const had = holdsConnectionSlot(before);
    const has = holdsConnectionSlot(after);
    if (!had && has && after) {
      // The intent is now in the projection: its reservation becomes load.
      if (after.connection) this.release(after.connection, stream, false);
      this.track(after);
    } else if (had && !has && before?.connection) {
      this.load.get(before.connection)?.delete(stream);
      this.agenda.wakeWaiters(before.connection);
    }
    if (after && isTerminal(after) && before?.connection) this.load.get(before.connection)?.delete(stream);
  }

  /** Another scheduler took slots since this one counted: the next take expects what is seen then. */
  forgetTake(connection: string): void {
    this.takes.delete(connection);
  }

  /**
   * Writes an intent together with the slot it takes, in one atomic append whose
   * compare-and-set on the connection stream fails if any other writer took a slot since this
   * scheduler counted (at revision `countedAt`). Takes on one connection are written one after
   * another: a take expects the revision its count saw or, if later, the one this scheduler's
   * previous take left (everything between was its own, and counted as reserved).
   */
  appendTaking(
    connection: string,
    countedAt: bigint | undefined,
    stream: string,
    events: DomainEvent[],
    expectedRevision: bigint | "no_stream",
    slot: { stream: string; attempt: number; token: string },
    /** A stream the append expects where it was decided on, not written (the task's). */
    check?: StreamCheck,
  ): Promise<{ position: bigint }> {
    const previous = this.chains.get(connection) ?? Promise.resolve();
    const write = previous
      .catch(() => {})
      .then(async () => {
        const own = this.takes.get(connection);
        const revision = own === undefined || (countedAt !== undefined && countedAt > own) ? countedAt : own;
        const [instance, taken] = await this.log.appendMany(
          [
            { streamId: stream, events, expectedRevision },
            {
              streamId: connectionStream(connection),
              events: [{ type: "ConnectionSlotsTaken", data: { connection, attempts: [slot] } }],
              expectedRevision: revision ?? "no_stream",
            },
          ],
          check ? { checks: [check] } : {},
        );
        if (taken) this.takes.set(connection, taken.nextExpectedRevision);
        return instance as { position: bigint };
      });
    this.chains.set(connection, write);
    void write
      .finally(() => {
        if (this.chains.get(connection) === write) this.chains.delete(connection);
      })
      .catch(() => {});
    return write;
  }
}
