import type { Batch } from "./protocol.js";

export type BatchSender<M> = (batch: Batch<M>) => void | Promise<void>;

/**
 * Collects the messages made in one tick and sends them as one batch from a `setImmediate`, so a
 * burst of 10,000 reports costs a handful of IPC messages instead of 10,000.
 */
export class TickBatcher<M> {
  private pending: M[] = [];
  /** Messages taken back before their batch left (see withdraw). */
  private readonly withdrawn = new Set<M>();
  private scheduled: NodeJS.Immediate | undefined;
  /** Batches sent so far: a message pushed when this read n is still pending while it reads n. */
  sent = 0;
  private lastSend: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: BatchSender<M>,
    private readonly onError: (err: unknown) => void = (err) => console.error("chronolog: send failed", err),
  ) {}

  push(message: M): void {
    this.pending.push(message);
    this.scheduled ??= setImmediate(() => void this.flush());
  }

  get size(): number {
    return this.pending.length - this.withdrawn.size;
  }

  /** Leaves out of the next batch a message pushed since the last one left (said by the caller). */
  withdraw(message: M): void {
    this.withdrawn.add(message);
  }

  /** Sends what is pending now; resolves when the sender has taken it (and every earlier batch). */
  flush(): Promise<void> {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const messages =
      this.withdrawn.size === 0 ? this.pending : this.pending.filter((m) => !this.withdrawn.has(m));
    this.pending = [];
    this.withdrawn.clear();
    if (messages.length === 0) return this.lastSend;
    this.sent += 1;
    const batch: Batch<M> = { kind: "batch", messages };
    let sent: Promise<void>;
    try {
      sent = Promise.resolve(this.send(batch)).catch(this.onError);
    } catch (err) {
      this.onError(err);
      sent = Promise.resolve();
    }
    const previous = this.lastSend;
    this.lastSend = Promise.all([previous, sent]).then(() => {});
    return this.lastSend;
  }
}
