import type { DomainEvent, EventDataOf } from "../events/catalog.js";
import { countsForTask, isTerminal, TERMINAL_INSTANCE_STATUSES } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import type { SchedulerProjection } from "../projection/scheduler-projection.js";
import { firstSlotAtOrAfter, prevCronTime } from "../schedule/cron.js";
import { shortInstant, toInstant } from "../schedule/interval.js";
import { isExternal } from "../spec.js";
import { instanceStream, taskStream } from "../streams.js";
import type { PlannedWrite, PlanRefusal } from "./plan-backfill.js";
import { refusal } from "./plan-backfill.js";
import type { BackfillWindow, TaskState } from "./state.js";
import { slotFrom } from "./success-path.js";

/** Where a task whose backfill is cancelled goes. */
export interface CancelledTarget {
  readonly task: string;
  /** The interval it stood at in the backfill's walk. */
  readonly at: string;
  /** The interval its schedule runs next once the backfill is off it: where it stood before. */
  readonly returnsTo: string;
  /**
   * The interval under way there (an attempt out, a retry due, a success not yet recorded): it
   * is finished first, then the task returns. Absent: it returns at once.
   */
  readonly finishing?: string;
}

/** An interval of a backfill's run that will not run now: closed as cancelled, so the run can end. */
export interface CancelledRunTask {
  readonly runId: string;
  readonly task: string;
  readonly logicalDate: string;
  /** The instance stream it is closed in, and the event (the shell writes it at the stream's revision). */
  readonly streamId: string;
  readonly event: DomainEvent;
}

export interface BackfillCancelRequest {
  readonly backfillId: string;
  /** Why, as the operator said it (written in each event). */
  readonly reason?: string;
}

export type BackfillCancelDecision =
  | {
      readonly kind: "planned";
      readonly targets: CancelledTarget[];
      /** The task streams' resets, each with a compare-and-set on the task's revision. */
      readonly writes: PlannedWrite[];
      /** The backfill's runs' intervals closed as cancelled (none a task still finishes). */
      readonly runTasks: CancelledRunTask[];
    }
  | PlanRefusal;

/**
 * Whether the task's current interval is under way for it: an attempt dispatched and not ended,
 * a retry due, or a success its completion has not recorded yet. Moving the task would leave
 * it to no one; a cancel lets it finish first.
 */
function busyAt(projection: SchedulerProjection, task: TaskState): boolean {
  const inst = projection.instances.get(instanceStream(task.key, task.logicalDate));
  if (!inst || !countsForTask(inst, task)) return false;
  return !isTerminal(inst) || (inst.status === "success" && inst.dispatchedAt > task.movedAt);
}

/**
 * The position a backfill's walk returns `task` to: where it stood before the backfill (its
 * resume point, on the schedule it has now and not before its start date), or, for a range that
 * ended at the interval it stood at, that interval, unfinished.
 */
export function returnPosition(
  task: TaskState,
  window: BackfillWindow,
): { logicalDate: string; nextRunDate: string; prevIntervalStart: string | null } {
  if (window.resume) {
    const at = slotFrom(task.spec, window.resume.logicalDate);
    if (at.logicalDate === window.resume.logicalDate) return window.resume;
    return { ...at, prevIntervalStart: window.resume.prevIntervalStart };
  }
  // A window recorded without one (its range ended where the task stood): that interval, on the
  // schedule it has now and not before its start date, unfinished.
  const { cron, timezone, startDate } = task.spec;
  const at = slotFrom(task.spec, window.until);
  const before = prevCronTime(cron, timezone, new Date(at.logicalDate));
  const firstDeclared = firstSlotAtOrAfter(cron, timezone, new Date(startDate));
  return {
    ...at,
    prevIntervalStart: before.getTime() >= firstDeclared.getTime() ? toInstant(before) : null,
  };
}

/**
 * The cancel of a pending backfill, pure: every task its window walks returns to where it stood
 * before it (its schedule then runs on as if the backfill had not been asked for); a task with
 * its interval under way finishes that interval first, its window cut to end there. The
 * intervals of the backfill's runs that will not run now are closed as cancelled, so that each
 * run ends. Refused when no task walks the backfill: finished, cancelled, or never started.
 */
export function planCancelBackfill(
  projection: SchedulerProjection,
  request: BackfillCancelRequest,
): BackfillCancelDecision {
  const { backfillId } = request;
  const why = `backfill ${backfillId} cancelled${request.reason ? `: ${request.reason}` : ""}`;
  const note = request.reason ? { note: request.reason } : {};
  const targets: CancelledTarget[] = [];
  const writes: PlannedWrite[] = [];
  /**
   * The dates each task's walk will not come to now: those of its window before where it returns
   * (its own interval there is its schedule's again), but the one it finishes.
   */
  const leaves = new Map<string, (date: string) => boolean>();
  for (const task of projection.tasks.values()) {
    const window = task.backfill;
    if (!window || window.backfillId !== backfillId) continue;
    const back = returnPosition(task, window);
    const busy = busyAt(projection, task);
    targets.push({
      task: task.id,
      at: task.logicalDate,
      returnsTo: back.logicalDate,
      ...(busy ? { finishing: task.logicalDate } : {}),
    });
    const from = Date.parse(window.from ?? task.logicalDate);
    const until = Date.parse(window.until);
    const returnsTo = Date.parse(back.logicalDate);
    const finishingAt = busy ? task.logicalDate : undefined;
    leaves.set(task.id, (date) => {
      const at = Date.parse(date);
      return date !== finishingAt && at >= from && at <= until && at < returnsTo;
    });
    if (busy) {
      // Its window cut to end at the interval under way (one on its last interval already is
      // written too: the cancel is recorded on every task it touches).
      writes.push(
        reset(task, {
          logicalDate: task.logicalDate,
          nextRunDate: task.nextRunDate,
          prevIntervalStart: task.prevIntervalStart,
          reason: "backfill_cancelled",
          ...note,
          until: task.logicalDate,
          ...(returnsTo > Date.parse(task.logicalDate) ? { resume: back } : {}),
          backfillId,
          ...(window.from && window.from !== task.logicalDate ? { from: window.from } : {}),
          ...(window.priority !== undefined ? { priority: window.priority } : {}),
          continues: true,
        }),
      );
    } else writes.push(reset(task, { ...back, reason: "backfill_cancelled", ...note, backfillId }));
  }
  if (targets.length === 0)
    return refusal(
      "not_found",
      `no task walks backfill ${backfillId}: it has finished, was cancelled, or never started (chronolog task TASK shows a task's backfill and its id)`,
    );
  // Every run going (a backfill's try, or a rerun's or trigger's its window joined) that waits for
  // a task at a date its walk will not come to now.
  const runTasks: CancelledRunTask[] = [];
  for (const run of projection.runs.values()) {
    if (run.status !== "running") continue;
    for (const id of run.tasks) {
      const outcome = run.outcomes[id];
      if (outcome !== undefined && TERMINAL_INSTANCE_STATUSES.has(outcome)) continue;
      const task = projection.tasks.get(id);
      // (An outside task's interval is its producer's to report, and a report stands for the
      // interval whenever the task comes to it: it is not closed here.)
      if (!task || isExternal(task.spec) || !leaves.get(id)?.(run.logicalDate)) continue;
      runTasks.push({
        runId: run.runId,
        task: id,
        logicalDate: run.logicalDate,
        streamId: instanceStream(task.key, run.logicalDate),
        event: {
          type: "InstanceCancelled",
          data: { key: task.key, logicalDate: run.logicalDate, reason: why, runId: run.runId },
        },
      });
    }
  }
  const order = parentsFirst(
    projection,
    targets.map((t) => t.task),
  );
  const rank = (task: string) => order.get(task) ?? 0;
  return {
    kind: "planned",
    targets: targets.sort((a, b) => rank(a.task) - rank(b.task)),
    writes,
    runTasks,
  };
}

/**
 * Each of `ids` with its depth among them (0: none of its parents is one of them; else one more
 * than its deepest parent's), for listing a cancel's tasks upstream first, as its backfill walks
 * them (a sort by depth keeps the catalogue's order within a depth). Without recursion: a chain
 * of thousands of tasks is as deep.
 */
function parentsFirst(projection: SchedulerProjection, ids: readonly string[]): Map<string, number> {
  const among = new Set(ids);
  // Per task, its parents among them not yet given a depth (Kahn's order, a depth a round).
  const waiting = new Map<string, number>();
  for (const id of ids) {
    const parents = new Set((projection.tasks.get(id)?.parents ?? []).map(formatTaskKey));
    waiting.set(id, [...parents].filter((p) => among.has(p)).length);
  }
  const depth = new Map<string, number>();
  let round = ids.filter((id) => waiting.get(id) === 0);
  let d = 0;
  for (; round.length > 0; d++) {
    const next: string[] = [];
    for (const id of round) {
      depth.set(id, d);
      for (const child of projection.children.of(id)) {
        const left = waiting.get(child);
        if (left === undefined || depth.has(child)) continue;
        waiting.set(child, left - 1);
        if (left === 1) next.push(child);
      }
    }
    round = next;
  }
  // (Declarations are acyclic: nothing is left; a graph that were not would list the rest last.)
  for (const id of ids) if (!depth.has(id)) depth.set(id, d);
  return depth;
}

function reset(task: TaskState, data: Omit<EventDataOf<"IntervalReset">, "key">): PlannedWrite {
  return {
    streamId: taskStream(task.key),
    expectedRevision: task.revision,
    events: [{ type: "IntervalReset", data: { key: task.key, ...data } }],
  };
}

/** One task's line of a cancel, in words. */
export function describeCancelled(t: CancelledTarget): string {
  return t.finishing !== undefined
    ? `${t.task}: finishes ${shortInstant(t.finishing)}, under way, then returns to ${shortInstant(t.returnsTo)}`
    : `${t.task}: at ${shortInstant(t.at)}, returns to ${shortInstant(t.returnsTo)}`;
}
