/** How long an answer's reading of the scheduler's clock is kept against lower ones (ms). */
const KEEP_MS = 60_000;

/**
 * The scheduler's clock as a remote worker knows it: at least what its latest answers said
 * (their `now`), advanced by the worker's own monotonic clock since each was read. An answer
 * was stamped before it was read, so this is never ahead of the scheduler's clock. The highest
 * reading is kept (the one that travelled fastest), and replaced by a newer one, however low,
 * once it is a minute old: the two clocks' rates differ a little, and a reading kept for hours
 * could run ahead of the scheduler's.
 *
 * With it the worker knows how long, at the least, a command took to reach it (a command
 * batch carries the scheduler's clock as it was queued: `at`): a stream that a cut link held
 * up delivers what it held when the link is back, and by then the scheduler may have given an
 * attempt up and its retry to another worker.
 */
export class SchedulerClock {
  /** The scheduler's clock less the worker's (ms), at the least; none before the first answer. */
  private offset: number | undefined;
  /** When (the worker's clock) that reading was taken. */
  private readAt = 0;

  constructor(private readonly localNow: () => number) {}

  /** An answer of the scheduler, stamped `schedulerNow` (epoch ms), was just read. */
  heard(schedulerNow: unknown): void {
    if (typeof schedulerNow !== "number" || !Number.isFinite(schedulerNow)) return;
    const local = this.localNow();
    const offset = schedulerNow - local;
    if (this.offset === undefined || offset >= this.offset || local - this.readAt > KEEP_MS) {
      this.offset = offset;
      this.readAt = local;
    }
  }

  /**
   * A registration's answer was just read: the scheduler may be another process than the one
   * heard before (restarted, its clock counting from another origin), so its reading replaces
   * whatever was kept.
   */
  registered(schedulerNow: unknown): void {
    this.offset = undefined;
    this.heard(schedulerNow);
  }

  /**
   * How long ago the scheduler's clock read `at` (ms), at the least: 0 when unknown (no answer
   * yet, or a scheduler that does not stamp its commands).
   */
  since(at: unknown): number {
    if (this.offset === undefined || typeof at !== "number" || !Number.isFinite(at)) return 0;
    return Math.max(0, this.offset + this.localNow() - at);
  }
}
