import { setIn } from "./sets.js";
import { TimerQueue } from "./timer-queue.js";

/**
 * What the scheduler's next pass looks at: the tasks marked dirty, those waiting for a limit
 * to free a slot (woken by its key: a connection, `run:<run id>` or `run:<workflow>`), and
 * those with a timer. Every wake asks for a pass.
 */
export class Agenda {
  readonly dirty = new Set<string>();
  /** Nothing new starts: the scheduler stopped, or drains for a shutdown (reports still apply). */
  halted = false;
  /** key -> tasks to look at again when it wakes. */
  private readonly waiting = new Map<string, Set<string>>();
  private readonly timers: TimerQueue;

  constructor(
    now: () => number,
    private readonly passNeeded: () => void,
  ) {
    this.timers = new TimerQueue((keys) => {
      for (const k of keys) this.dirty.add(k);
      passNeeded();
    }, now);
  }

  /** Decide the task again on the next pass. */
  wake(taskId: string): void {
    this.dirty.add(taskId);
    this.passNeeded();
  }

  /** Decide the task again at `at` (epoch milliseconds). */
  wakeAt(taskId: string, at: number): void {
    this.timers.wakeAt(taskId, at);
  }

  /** The task is looked at again when `key` wakes. */
  waitOn(key: string, taskId: string): void {
    setIn(this.waiting, key).add(taskId);
  }

  /** A slot of `key` may have come free: what waits for it is decided again. */
  wakeWaiters(key: string): void {
    const w = this.waiting.get(key);
    if (!w || w.size === 0) return;
    this.waiting.delete(key);
    for (const id of w) this.wake(id);
  }

  stop(): void {
    this.timers.stop();
  }
}
