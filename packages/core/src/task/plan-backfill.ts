import type { DomainEvent } from "../events/catalog.js";
import { countsForTask, isTerminal } from "../instance/state.js";
import type { SchedulerProjection } from "../projection/scheduler-projection.js";
import { firstSlotAtOrAfter, prevCronTime } from "../schedule/cron.js";
import { type DateArg, rangeEnd, rangeStart } from "../schedule/day.js";
import { shortInstant, toInstant } from "../schedule/interval.js";
import { instanceStream, taskStream } from "../streams.js";
import { describeWindow, planWindow, slotsIn, type WindowReset, windowHalted } from "./backfill-window.js";
import type { TaskState } from "./state.js";

/** One write a plan makes: events for a stream, expected at a revision (compare-and-set). */
export interface PlannedWrite {
  readonly streamId: string;
  readonly events: DomainEvent[];
  readonly expectedRevision: bigint | "no_stream";
}

/** Why an operation is refused before anything is written; the shell raises it as its error. */
export interface PlanRefusal {
  readonly kind: "refused";
  readonly error: "validation" | "state" | "not_found";
  /** The flag or field at fault, for a validation refusal. */
  readonly field?: string;
  readonly message: string;
}

export function refusal(error: PlanRefusal["error"], message: string, field?: string): PlanRefusal {
  return { kind: "refused", error, message, ...(field ? { field } : {}) };
}

/** A pending backfill or rerun window a range joins (or takes over, when its walk has stopped). */
export interface JoinedWindow {
  /** The window as it was, in words (whose, its range, how far it has come). */
  readonly was: string;
  /** `joined` a window still walking; `took_over` one stopped at an interval that failed. */
  readonly how: "joined" | "took_over";
  /** The range walked now. */
  readonly from: string;
  readonly until: string;
}

/** The pending window a range set on `task` joins or takes over, as a plan says it (none: none). */
export function joinedWindow(task: TaskState, reset: WindowReset): JoinedWindow | undefined {
  if (!reset.joins) return undefined;
  return {
    was: describeWindow(task, reset.joins),
    how: windowHalted(task) ? "took_over" : "joined",
    from: reset.logicalDate,
    until: reset.until,
  };
}

/**
 * The IntervalReset that sets `task` back over the range `reset` decided, in the window
 * `backfillId`, its intervals at `priority` (absent: the pending window's it joins, if any).
 */
export function resetWrite(
  task: TaskState,
  reset: WindowReset,
  reason: "backfill" | "operator",
  backfillId: string | undefined,
  priority?: number,
  continues = false,
): PlannedWrite {
  const { joins, from, until, resume, ...position } = reset;
  const at = priority ?? joins?.priority;
  return {
    streamId: taskStream(task.key),
    expectedRevision: task.revision,
    events: [
      {
        type: "IntervalReset",
        data: {
          key: task.key,
          ...position,
          reason,
          until,
          ...(resume ? { resume } : {}),
          ...(backfillId ? { backfillId } : {}),
          ...(from !== position.logicalDate ? { from } : {}),
          ...(at !== undefined ? { priority: at } : {}),
          ...(continues ? { continues } : {}),
        },
      },
    ],
  };
}

export interface BackfillTarget {
  readonly task: string;
  /** First and last interval this backfill names for the task (after its own rules). */
  readonly from: string;
  readonly until: string;
  readonly intervals: number;
  /** The backfill whose window walks the range: this one's, or the pending one it joined. */
  readonly backfillId: string;
  /** The pending window it joined, as it was, and the range walked now. */
  readonly merged?: JoinedWindow;
  /** What the task's own rules changed or will make it do (start date, end date, paused). */
  readonly notes: readonly string[];
}

export interface BackfillSkip {
  readonly task: string;
  readonly reason: string;
}

export interface BackfillRequest {
  readonly task: string;
  readonly from: DateArg;
  readonly to: DateArg;
  readonly downstream: boolean;
  readonly force: boolean;
  /** The id a new window gets. */
  readonly backfillId: string;
  /** The priority its intervals compete with (absent: below every scheduled interval). */
  readonly priority?: number;
}

export type BackfillDecision =
  | {
      readonly kind: "planned";
      readonly targets: BackfillTarget[];
      readonly skipped: BackfillSkip[];
      readonly writes: PlannedWrite[];
    }
  | PlanRefusal;

/** The task and, with `downstream`, every task below it, parents before children. */
export function subtree(projection: SchedulerProjection, id: string, downstream: boolean): string[] {
  const order: string[] = [id];
  if (!downstream) return order;
  const seen = new Set(order);
  for (let i = 0; i < order.length; i++) {
    for (const child of projection.children.of(order[i] as string)) {
      if (!seen.has(child) && projection.tasks.has(child)) {
        seen.add(child);
        order.push(child);
      }
    }
  }
  return order;
}

/**
 * Moving a task's schedule while an attempt of its current interval is in flight (or has
 * succeeded without the task advancing yet) would let that interval run again when the task
 * comes back to it: the tasks for which that is so, in words (empty: all settled).
 */
export function unsettled(projection: SchedulerProjection, tasks: readonly TaskState[]): string[] {
  const busy: string[] = [];
  for (const task of tasks) {
    const inst = projection.instances.get(instanceStream(task.key, task.logicalDate));
    if (inst && (!isTerminal(inst) || (inst.status === "success" && inst.dispatchedAt > task.movedAt))) {
      busy.push(`${task.id} ${task.logicalDate} is ${inst.status}`);
    }
  }
  return busy;
}

/** Whether the task's current interval has an attempt dispatched and not ended. */
function underWay(projection: SchedulerProjection, task: TaskState): boolean {
  const inst = projection.instances.get(instanceStream(task.key, task.logicalDate));
  return inst !== undefined && !isTerminal(inst) && countsForTask(inst, task);
}

export function unsettledRefusal(busy: readonly string[]): PlanRefusal {
  return refusal("state", `wait for the running intervals to finish first: ${busy.join("; ")}`);
}

const count = (n: number) => (n === 1 ? "1 interval" : `${n} intervals`);

/**
 * The decision of one backfill on the projection as it stands, pure: the reset of every target
 * and what each will do, or a refusal before anything is written. The same plan is printed by a
 * dry run and carried out by the real one.
 *
 * The task named is held to its own rules unless `force`: a range before its startDate is
 * refused. With `downstream`, each task below it is held to its own rules too: intervals before
 * its startDate are not reset (said per task), a task the range lies wholly before is skipped,
 * a retired one skipped; `force` lifts the start dates for all. A paused task in the subtree
 * refuses the whole backfill unless `force`, with which its intervals wait for the resume (said).
 * Intervals after a task's endDate never run, `force` or not: they are not reset (said).
 *
 * A target with a backfill or rerun still pending joins it when the ranges overlap or touch (see
 * planWindow), or takes over one whose walk stopped at a failed interval; if any target cannot,
 * the whole backfill is refused, naming the pending one, its range and how far it has come.
 */
export function planBackfill(projection: SchedulerProjection, request: BackfillRequest): BackfillDecision {
  const { task: id, from, to, force, backfillId } = request;
  const named = projection.tasks.get(id);
  if (!named) return refusal("not_found", `no task ${id} is declared`);
  const zone = named.spec.timezone;
  if (rangeEnd(to, zone).getTime() < rangeStart(from, zone).getTime())
    return refusal("validation", `${to.text} is before --from ${from.text}`, "--to");
  const ids = subtree(projection, id, request.downstream);
  if (!force) {
    const paused = ids.filter((t) => projection.tasks.get(t)?.status === "paused");
    if (paused.length > 0)
      return refusal(
        "state",
        `${paused.join(", ")} ${paused.length === 1 ? "is" : "are"} paused: a backfill would wait for the resume (resume first, or use --force)`,
      );
  }
  const targets: BackfillTarget[] = [];
  const skipped: BackfillSkip[] = [];
  const writes: PlannedWrite[] = [];
  const refused: string[] = [];
  const reset: TaskState[] = [];
  for (const taskId of ids) {
    const task = projection.tasks.get(taskId) as TaskState;
    const { cron, timezone, startDate, endDate } = task.spec;
    if (task.status === "retired") {
      skipped.push({ task: taskId, reason: "retired: it runs nothing" });
      continue;
    }
    const notes: string[] = [];
    let first = toInstant(firstSlotAtOrAfter(cron, timezone, rangeStart(from, timezone)));
    let last = toInstant(prevCronTime(cron, timezone, rangeEnd(to, timezone)));
    const firstDeclared = toInstant(firstSlotAtOrAfter(cron, timezone, new Date(startDate)));
    // A day given to --from that holds the task's first interval starts there: "from the first
    // interval that starts on that day", not from a midnight before the task began.
    const dayHoldsStart =
      from.day !== undefined && Date.parse(firstDeclared) <= rangeEnd(from, timezone).getTime();
    if (Date.parse(first) < Date.parse(firstDeclared) && dayHoldsStart && !force) first = firstDeclared;
    if (Date.parse(first) > Date.parse(last)) {
      skipped.push({ task: taskId, reason: "no interval of its schedule falls in the range" });
      continue;
    }
    if (Date.parse(first) < Date.parse(firstDeclared)) {
      if (taskId === id && !force)
        return refusal(
          "validation",
          `${from.text} is before ${id}'s startDate ${startDate}: intervals it was never declared for (use --force to run them anyway)`,
          "--from",
        );
      if (!force) {
        if (Date.parse(firstDeclared) > Date.parse(last)) {
          skipped.push({
            task: taskId,
            reason: `the range is before its startDate ${shortInstant(startDate)} (--force runs it anyway)`,
          });
          continue;
        }
        const before = slotsIn(
          task,
          first,
          prevCronTime(cron, timezone, new Date(Date.parse(firstDeclared) - 1)).toISOString(),
        );
        notes.push(
          `from its startDate ${shortInstant(startDate)}: ${count(before)} from ${shortInstant(first)} before it not reset (--force resets them too)`,
        );
        first = firstDeclared;
      } else
        notes.push(`--force: from ${shortInstant(first)}, before its startDate ${shortInstant(startDate)}`);
    }
    if (endDate && Date.parse(last) > Date.parse(endDate)) {
      const lastDeclared = toInstant(prevCronTime(cron, timezone, new Date(endDate)));
      if (Date.parse(lastDeclared) < Date.parse(first)) {
        if (taskId === id)
          return refusal(
            "validation",
            `${from.text} is after ${id}'s endDate ${endDate}: its schedule has ended and runs no interval there`,
            "--from",
          );
        skipped.push({ task: taskId, reason: `the range is after its endDate ${shortInstant(endDate)}` });
        continue;
      }
      notes.push(
        `until its endDate ${shortInstant(endDate)}: intervals after ${shortInstant(lastDeclared)} never run and are not reset`,
      );
      last = lastDeclared;
    }
    // The task's front: the interval its schedule runs next (where a pending backfill returns
    // to). A backfill runs again what the task has passed, and the interval it stands at (a failed
    // one, say); after that, its schedule runs each interval on its own, and a range reaching
    // further would move the task past intervals it never ran.
    const front = task.backfill?.resume?.logicalDate ?? task.logicalDate;
    if (Date.parse(last) > Date.parse(front)) {
      if (Date.parse(first) > Date.parse(front)) {
        if (taskId === id)
          return refusal(
            "validation",
            `${from.text} is after ${id}'s next interval ${shortInstant(front)}: a backfill runs again the intervals up to where the task stands; its schedule runs those after on its own`,
            "--from",
          );
        skipped.push({
          task: taskId,
          reason: `the range is after its next interval ${shortInstant(front)}: its schedule runs it on its own`,
        });
        continue;
      }
      notes.push(
        `until its next interval ${shortInstant(front)}: those after it, its schedule runs on its own (not reset)`,
      );
      last = front;
    }
    if (task.status === "paused") notes.push(`paused: its intervals wait for \`chronolog resume ${taskId}\``);
    const plan = planWindow(task, first, last);
    if (plan.kind === "refused") {
      refused.push(plan.reason);
      continue;
    }
    // Joining a walk where it stands, its attempt under way there goes on and counts; any other
    // move of a task with an attempt under way waits for it (see unsettled).
    const continues =
      plan.reset.joins !== null && plan.reset.logicalDate === task.logicalDate && underWay(projection, task);
    if (!continues) reset.push(task);
    const windowId = plan.reset.joins?.backfillId ?? backfillId;
    const merged = joinedWindow(task, plan.reset);
    targets.push({
      task: taskId,
      from: first,
      until: last,
      intervals: slotsIn(task, first, last),
      backfillId: windowId,
      ...(merged ? { merged } : {}),
      notes,
    });
    writes.push(resetWrite(task, plan.reset, "backfill", windowId, request.priority, continues));
  }
  const busy = unsettled(projection, reset);
  if (busy.length > 0) return unsettledRefusal(busy);
  if (refused.length > 0) return refusal("state", `backfill refused: ${refused.join("; ")}`);
  return { kind: "planned", targets, skipped, writes };
}
