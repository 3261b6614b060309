import {
  alertStream,
  checkDeadline,
  deadlineLabel,
  deadlineOf,
  nextInterval,
  nextWatched,
  RECENT_DONE_ALERTS,
  type SchedulerProjection,
  shortInstant,
  span,
  type TaskState,
  toInstant,
} from "@chronolog/core";
import { type EventLog, WrongExpectedRevisionError } from "@chronolog/log";
import { alertWrites } from "./alerts.js";
import type { SchedulerLogger } from "./scheduler-types.js";
import { TimerQueue } from "./timer-queue.js";

/** The interval of a task whose deadline is watched. */
interface Watched {
  readonly logicalDate: string;
  readonly due: number;
  riskRaised: boolean;
}

export interface DeadlineWatchOptions {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly now: () => number;
  /** Whether this scheduler decides for the task (its shard). */
  readonly owns: (task: TaskState) => boolean;
  readonly logger: Pick<SchedulerLogger, "error">;
  readonly decideOptions?: Parameters<typeof checkDeadline>[5];
}

/** Tasks checked in one turn of the event loop at most: a start with many deadlines is spread. */
const CHECKS_PER_TURN = 500;
/** Descendants of a failed task looked at again at most (their estimate changed at once). */
const DESCENDANTS_WOKEN = 1000;
/** The `once` of deadline alerts: raised once per interval (the alert id names the interval). */
const ONCE = "d";

/**
 * Watches deadlines: for each task that declares one, one interval at a time (the first not
 * done whose deadline is still to come) and one entry in a timer queue, at the next time its
 * estimate is due to be looked at (halfway through its slack) or its deadline. Nothing is
 * scanned per pass, and tasks without a deadline cost one field read per event of theirs.
 * Deadlines that passed before the watch began (a start, a new declaration, a catch-up of old
 * intervals) raise nothing.
 */
export class DeadlineWatch {
  private readonly timers: TimerQueue;
  private readonly watched = new Map<string, Watched>();
  private readonly queue: string[] = [];
  private draining = false;
  private stopped = false;
  private started = false;
  /** Counters for benchmarks and tests. */
  readonly stats = { checks: 0, raised: 0 };

  constructor(private readonly o: DeadlineWatchOptions) {
    this.timers = new TimerQueue((keys) => this.due(keys), o.now);
  }

  /**
   * Every task with a deadline, watched from now: each is looked at (its interval found, its
   * estimate made) CHECKS_PER_TURN a turn of the event loop, never all at once.
   */
  start(): void {
    this.started = true;
    for (const task of this.o.projection.tasks.values()) if (task.spec.deadline) this.queue.push(task.id);
    if (!this.draining && this.queue.length > 0) this.drain();
  }

  stop(): void {
    this.stopped = true;
    this.timers.stop();
  }

  /** How many intervals are watched. */
  get size(): number {
    return this.watched.size;
  }

  /** A task-stream event of `id` was applied (called for every one: cheap for tasks without a deadline). */
  taskEvent(id: string, type: string, data?: { logicalDate?: string }, recordedAt?: string): void {
    if (this.stopped || !this.started) return;
    const task = this.o.projection.tasks.get(id);
    if (type === "IntervalFailed" && this.watched.size > 0) this.wakeDescendants(id);
    if (!task?.spec.deadline) {
      this.watched.delete(id);
      return;
    }
    if (type === "TaskDeclared" || type === "TaskDeclarationChanged" || type === "TaskRevived") {
      this.watchFrom(task);
      return;
    }
    if (type === "IntervalCompleted" && data?.logicalDate)
      void this.metLate(task, data.logicalDate, recordedAt ? Date.parse(recordedAt) : this.o.now());
    if (this.watched.has(id)) this.timers.wakeAt(id, this.o.now());
    else this.watchFrom(task);
  }

  /** Watches the task's first interval whose deadline is still to come, and looks at it now. */
  private watchFrom(task: TaskState, from = task.logicalDate): void {
    const next = nextWatched(task.spec, from, this.o.now());
    if (!next) {
      this.watched.delete(task.id);
      return;
    }
    this.watched.set(task.id, { logicalDate: next.logicalDate, due: next.deadline, riskRaised: false });
    this.timers.wakeAt(task.id, this.o.now());
  }

  private wakeDescendants(id: string): void {
    const seen = new Set<string>([id]);
    const todo = [id];
    const now = this.o.now();
    while (todo.length > 0 && seen.size < DESCENDANTS_WOKEN) {
      for (const child of this.o.projection.children.of(todo.pop() as string)) {
        if (seen.has(child)) continue;
        seen.add(child);
        todo.push(child);
        if (this.watched.has(child)) this.timers.wakeAt(child, now);
      }
    }
  }

  private due(keys: string[]): void {
    for (const k of keys) this.queue.push(k);
    if (!this.draining) this.drain();
  }

  private drain(): void {
    this.draining = true;
    const batch = this.queue.splice(0, CHECKS_PER_TURN);
    for (const id of batch) {
      try {
        this.check(id);
      } catch (error) {
        this.o.logger.error({ err: error, task: id }, "could not check the task's deadline");
      }
    }
    if (this.queue.length > 0 && !this.stopped) setImmediate(() => this.drain());
    else this.draining = false;
  }

  /** Looks at one task's watched interval: done, missed, at risk or on track. */
  check(id: string): void {
    const task = this.o.projection.tasks.get(id);
    if (!task?.spec.deadline || task.status === "retired") {
      this.watched.delete(id);
      return;
    }
    const now = this.o.now();
    let w = this.watched.get(id);
    if (!w) {
      // Not watched yet (the start): its first interval whose deadline is still to come.
      const next = nextWatched(task.spec, task.logicalDate, now);
      if (!next) return;
      w = { logicalDate: next.logicalDate, due: next.deadline, riskRaised: false };
      this.watched.set(id, w);
    }
    if (!this.o.owns(task)) {
      // Another scheduler's: no estimate here; looked at again at the deadline, in case it moved.
      if (now < w.due) this.timers.wakeAt(id, w.due);
      else this.watchFrom(task, nextInterval(task.spec, w.logicalDate));
      return;
    }
    this.stats.checks += 1;
    // A backfill moves the task back for a while: the intervals it had done stay done.
    const position = task.backfill?.resume?.logicalDate ?? task.logicalDate;
    const seen = position === task.logicalDate ? task : { ...task, logicalDate: position };
    const r = checkDeadline(
      this.o.projection,
      this.o.projection.durations,
      seen,
      w,
      now,
      this.o.decideOptions,
    );
    switch (r.kind) {
      case "done":
        this.watchFrom(task, nextInterval(task.spec, w.logicalDate));
        return;
      case "missed":
        void this.raise(task, "deadline_missed", w.logicalDate, r.reason);
        this.watchFrom(task, nextInterval(task.spec, w.logicalDate));
        return;
      case "at_risk":
        w.riskRaised = true;
        void this.raise(task, "deadline_at_risk", w.logicalDate, r.reason);
        this.timers.wakeAt(id, r.recheckAt);
        return;
      case "wait":
        this.timers.wakeAt(id, r.recheckAt);
        return;
    }
  }

  /** An interval done after its deadline, whose miss was raised: say it was met late. */
  private async metLate(task: TaskState, logicalDate: string, at: number): Promise<void> {
    const due = deadlineOf(task.spec, logicalDate);
    if (due === null || at <= due || !this.o.owns(task)) return;
    const missed = alertStream(`deadline_missed:${task.id}@${logicalDate}#${ONCE}`);
    try {
      // The projection holds every alert being delivered and the most recent done ones: the log
      // is read only when it may have let go of this one (a catch-up of old intervals, whose
      // deadlines raised nothing, reads nothing).
      const known =
        this.o.projection.alerts.has(missed) ||
        (this.o.projection.alerts.size >= RECENT_DONE_ALERTS &&
          (await this.o.log.streamRevision(missed)) !== "no_stream");
      if (!known) return;
      const d = task.spec.deadline;
      if (!d) return;
      const reason = `${deadlineLabel(d)} deadline late: done ${shortInstant(toInstant(new Date(at)))}, ${span(at - due)} after ${shortInstant(toInstant(new Date(due)))}`;
      await this.raise(task, "deadline_met_late", logicalDate, reason);
    } catch (error) {
      this.o.logger.error({ err: error, task: task.id }, "could not record a deadline met late");
    }
  }

  private async raise(
    task: TaskState,
    kind: "deadline_missed" | "deadline_at_risk" | "deadline_met_late",
    logicalDate: string,
    reason: string,
  ): Promise<void> {
    const writes = alertWrites(this.o.projection, kind, { task: task.key, logicalDate, reason }, ONCE);
    const w = writes[0];
    if (!w) return;
    try {
      await this.o.log.append(w.streamId, w.events, { expectedRevision: w.expectedRevision });
      this.stats.raised += 1;
    } catch (error) {
      // Raised already (another scheduler, or before a restart): once is once.
      if (error instanceof WrongExpectedRevisionError) return;
      this.o.logger.error({ err: error, task: task.id, kind }, "could not raise a deadline alert");
    }
  }
}
