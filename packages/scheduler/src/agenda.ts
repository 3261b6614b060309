import { setIn } from "./sets.js";
import { TimerQueue } from "./timer-queue.js";

/**
 * What the scheduler's next pass looks at: the tasks marked dirty, those waiting for a limit
 * to free a slot (woken by its key: a connection, `run:<run id>` or `run:<workflow>`), and
 * those with a timer. Every wake asks for a pass.
 */
export class Agenda {
  /** The tasks to decide on the next pass, in the order they were marked. */
  private readonly dirty = new Set<string>();
  /**
   * Those of them that share a limit with other tasks (`limited`, asked as each is marked):
   * a pass takes them all, so a large burst of tasks that share none is taken in pieces
   * without going through the whole burst each time.
   */
  private readonly dirtyLimited = new Set<string>();
  /** Nothing new starts: the scheduler stopped, or drains for a shutdown (reports still apply). */
  halted = false;
  /** key -> tasks to look at again when it wakes. */
  private readonly waiting = new Map<string, Set<string>>();
  private readonly timers: TimerQueue;

  constructor(
    now: () => number,
    private readonly passNeeded: () => void,
    /** Whether a task shares a limit (a connection's or a workflow's slots) with others. */
    private readonly limited: (taskId: string) => boolean = () => false,
  ) {
    this.timers = new TimerQueue((keys) => {
      for (const k of keys) this.mark(k);
      passNeeded();
    }, now);
  }

  /** How many tasks the next pass has to decide. */
  get dirtyCount(): number {
    return this.dirty.size;
  }

  /** Decide the task again on the next pass. */
  wake(taskId: string): void {
    this.mark(taskId);
    this.passNeeded();
  }

  /** Decide every one of these tasks again on the next pass, without asking for one. */
  markAll(taskIds: Iterable<string>): void {
    for (const id of taskIds) this.mark(id);
  }

  /**
   * The tasks a pass decides: every marked one when they are at most `most`; otherwise every
   * one that shares a limit (all decided together, so that a limit's free slots go to the
   * highest claim first) and the first `most` of the others, in the order they were marked,
   * the rest left marked for the next pass. Its cost is that of what it takes, not of all
   * that is marked.
   */
  take(most: number): string[] {
    if (this.dirty.size <= most) {
      const all = [...this.dirty];
      this.dirty.clear();
      this.dirtyLimited.clear();
      return all;
    }
    const ids: string[] = [];
    for (const id of this.dirty) {
      if (ids.length === most) break;
      if (!this.dirtyLimited.has(id)) ids.push(id);
    }
    for (const id of ids) this.dirty.delete(id);
    for (const id of this.dirtyLimited) {
      ids.push(id);
      this.dirty.delete(id);
    }
    this.dirtyLimited.clear();
    return ids;
  }

  /** Marks the task for the next pass, as sharing a limit or not as it does now. */
  private mark(taskId: string): void {
    this.dirty.add(taskId);
    if (this.limited(taskId)) this.dirtyLimited.add(taskId);
    else if (this.dirtyLimited.size > 0) this.dirtyLimited.delete(taskId);
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
