import { LogReadOnlyError } from "./errors.js";
import { EventLog } from "./event-log.js";
import type { LogBackend, StoredEvent, StreamRevision } from "./types.js";

/**
 * A log as it was right after the event at `position`: nothing after it is read, and it takes
 * no writes. Every read of the state "as of" a position goes through one, so a query written
 * for the live log answers for the past unchanged.
 */
class AsOfBackend implements LogBackend {
  readonly name: string;

  constructor(
    private readonly inner: LogBackend,
    private readonly position: bigint,
  ) {
    this.name = `${inner.name} as of position ${position}`;
  }

  append(): never {
    throw new LogReadOnlyError(this.name);
  }

  appendMany(): never {
    throw new LogReadOnlyError(this.name);
  }

  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    const events = await this.inner.readStream(streamId, fromRevision, maxCount);
    // A stream's positions grow with its revisions: what follows the cut is a suffix.
    const end = events.findIndex((e) => e.position > this.position);
    return end < 0 ? events : events.slice(0, end);
  }

  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    if (fromPosition > this.position) return [];
    const room = this.position - fromPosition + 1n;
    const n = room < BigInt(maxCount) ? Number(room) : maxCount;
    return (await this.inner.readAll(fromPosition, n)).filter((e) => e.position <= this.position);
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    let revision: StreamRevision = "no_stream";
    for (let from = 0n; ; ) {
      const page = await this.readStream(streamId, from, 1000);
      const last = page.at(-1);
      if (!last) return revision;
      revision = last.revision;
      if (page.length < 1000) return revision;
      from = last.revision + 1n;
    }
  }

  async headPosition(): Promise<bigint> {
    const head = await this.inner.headPosition();
    if (head < this.position) return head;
    return this.position;
  }

  watch(): () => void {
    return () => {};
  }

  async close(): Promise<void> {}
}

/** The log as it was right after `position`: read-only, and closing it leaves `log` open. */
export function logAsOf(log: EventLog, position: bigint): EventLog {
  return new EventLog(new AsOfBackend(log.backend, position), { actor: log.actor });
}

/**
 * The position of the last event recorded at or before `instant` (-1n: none). Events are
 * recorded in position order, so the search halves the log; with several writers whose clocks
 * disagree it is as right as their clocks are.
 */
export async function positionAsOf(log: EventLog, instant: Date): Promise<bigint> {
  const at = instant.getTime();
  let lo = 0n;
  let hi = await log.headPosition();
  let found = -1n;
  while (lo <= hi) {
    const mid = (lo + hi) / 2n;
    const [e] = await log.readAllStored({ fromPosition: mid, maxCount: 1 });
    if (!e) break;
    if (Date.parse(e.metadata.recordedAt) <= at) {
      found = e.position;
      lo = e.position + 1n;
    } else hi = mid - 1n;
  }
  return found;
}
