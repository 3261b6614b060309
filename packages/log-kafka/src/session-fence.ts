import { performance } from "node:perf_hooks";

export interface SessionFenceOptions {
  /** How long the group coordinator keeps a member it does not hear from. */
  readonly sessionTimeoutMs: number;
  /** How long before that the member fences itself. */
  readonly marginMs: number;
  /** Called when the fence comes down because no renewal came in time (not when one lifts it). */
  readonly onFence: () => void;
  /** A monotonic clock in milliseconds (default performance.now). */
  readonly now?: () => number;
}

/**
 * When a group member must stop acting as one. The coordinator drops a member it has not
 * heard from for a session, and a member cut off from it cannot hear that it was dropped (its
 * requests just go unanswered, for as long as the client's request timeout). What the member
 * can know is when it sent the last request the coordinator answered in a way that renews the
 * session: a heartbeat, or the sync that ends a rebalance. The coordinator cannot have heard
 * that request before it was sent, so it keeps the member at least a session past the moment
 * of sending. `marginMs` before that moment plus a session the member fences itself: it must
 * then stop everything it does as a member, so that it has stopped before another member can
 * be given its work. The fence lifts when a renewal sent less than `sessionTimeoutMs -
 * marginMs` ago is answered: the coordinator still knew the member then.
 *
 * Until its first renewal a member is fenced.
 */
export class SessionFence {
  private readonly now: () => number;
  private lastRenewal = Number.NEGATIVE_INFINITY;
  private down = true;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly o: SessionFenceOptions) {
    if (!(o.marginMs >= 0 && o.marginMs < o.sessionTimeoutMs))
      throw new RangeError(
        `the fence margin (${o.marginMs} ms) must be at least 0 and less than the session (${o.sessionTimeoutMs} ms)`,
      );
    this.now = o.now ?? (() => performance.now());
  }

  /** Silence after which the member is fenced: the session less the margin. */
  get fenceAfterMs(): number {
    return this.o.sessionTimeoutMs - this.o.marginMs;
  }

  /** When (on the fence's clock) the member fences itself unless it renews before. */
  get deadline(): number {
    return this.lastRenewal + this.fenceAfterMs;
  }

  /** How long ago the last renewal was sent (Infinity before the first). */
  get sinceRenewalMs(): number {
    return this.now() - this.lastRenewal;
  }

  /**
   * Whether the member is fenced now: by the clock, even before the timer that brings the fence
   * down has run (a busy event loop runs timers late).
   */
  get fenced(): boolean {
    return this.down || this.now() >= this.deadline;
  }

  /**
   * A request that renews the session, sent at `sentAt` (on the fence's clock), was answered.
   * Returns true when that lifts the fence.
   */
  renewed(sentAt: number): boolean {
    if (this.stopped) return false;
    if (sentAt > this.lastRenewal) this.lastRenewal = sentAt;
    const lifted = this.down && this.now() < this.deadline;
    if (lifted) this.down = false;
    this.arm();
    return lifted;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.down || this.stopped) return;
    // (Timers may fire a little early: check again rather than fence before the deadline.)
    this.timer = setTimeout(() => this.check(), Math.max(0, Math.ceil(this.deadline - this.now())));
    this.timer.unref();
  }

  private check(): void {
    this.timer = null;
    if (this.down || this.stopped) return;
    if (this.now() < this.deadline) {
      this.arm();
      return;
    }
    this.down = true;
    this.o.onFence();
  }
}

/**
 * A wall-clock time (epoch ms, as the Kafka client stamps its requests) on the monotonic clock,
 * measured back from now: a wall clock that is stepped later does not move it.
 */
export function monotonicOf(epochMs: number, now = performance.now(), wallNow = Date.now()): number {
  return now - Math.max(0, wallNow - epochMs);
}
