import type { Batch } from "./protocol.js";

export type BatchSender<M> = (batch: Batch<M>) => void | Promise<void>;

/**
 * Collects the messages made in one tick and sends them as one batch from a `setImmediate`, so a
 * burst of 10,000 reports costs a handful of IPC messages instead of 10,000.
 */
export class TickBatcher<M> {
  private pending: M[] = [];
  private scheduled: NodeJS.Immediate | undefined;
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
    return this.pending.length;
  }

  /** Sends what is pending now; resolves when the sender has taken it (and every earlier batch). */
  flush(): Promise<void> {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    if (this.pending.length === 0) return this.lastSend;
    const batch: Batch<M> = { kind: "batch", messages: this.pending };
    this.pending = [];
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
