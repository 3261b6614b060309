import { existsSync, realpathSync } from "node:fs";
import { basename, isAbsolute, join, relative, resolve } from "node:path";
import {
  type AttemptView,
  type BudgetedAttempt,
  currentAttempt,
  type DeadlineStanding,
  deadlineStanding,
  type Explanation,
  explainTask,
  foldInstance,
  heldReports,
  type InstanceState,
  instanceStream,
  isExternal,
  projectedSlots,
  type SchedulerProjection,
  type TaskState,
  taskStream,
  withBudget,
} from "@chronolog/core";
import type { EventLog, RecordedEvent } from "@chronolog/log";
import { requireTask } from "./operations.js";
import { renderProblem } from "./payload.js";

/**
 * The reads that the CLI and the HTTP API share: each answers from the projection and, where
 * it needs history, from the task's own streams, never from the whole log.
 */

/** One task as `tasks` lists it. */
export interface TaskRow {
  readonly task: string;
  readonly status: TaskState["status"];
  readonly condition: Explanation["condition"];
  readonly logicalDate: string;
  readonly prevIntervalStart: string | null;
  readonly nextRunDate: string | null;
  readonly reasons: readonly string[];
  readonly decision: Explanation["decision"];
  /** What an operator can do where it stands, each as the command that does it. */
  readonly nextSteps: Explanation["nextSteps"];
}

/** Every declared task (or those `filter` keeps), ordered by id, with where each stands now. */
export function taskRows(
  projection: SchedulerProjection,
  now: number,
  filter: (task: TaskState) => boolean = () => true,
): TaskRow[] {
  // Slots counted once for every task, and each payload rendered as the scheduler would.
  const options = { slots: projectedSlots(projection), renderProblem: renderProblem(projection) };
  return [...projection.tasks.values()]
    .filter(filter)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((task) => taskRow(projection, task, now, options));
}

/**
 * A page of tasks in id order: the `limit` first after `after` (the whole of them with no
 * limit), each with where it stands, and whether more follow. Only the page's tasks are
 * explained, and the catalogue is not sorted: one pass keeps the page's ids (or `idsAfter`
 * gives them, from the checkpoint's index).
 */
export function taskPage(
  projection: SchedulerProjection,
  now: number,
  page: { readonly limit?: number; readonly after?: string },
  idsAfter: (after: string | undefined, count: number) => string[] = (after, count) =>
    firstIdsAfter(projection.tasks.keys(), after, count),
): { rows: TaskRow[]; more: boolean } {
  const after = page.after;
  const limit = page.limit ?? Number.POSITIVE_INFINITY;
  if (limit === Number.POSITIVE_INFINITY) {
    const rows = taskRows(projection, now, after === undefined ? undefined : (t) => t.id > after);
    return { rows, more: false };
  }
  const ids = idsAfter(after, limit + 1);
  const options = { slots: projectedSlots(projection), renderProblem: renderProblem(projection) };
  const rows = ids
    .slice(0, limit)
    .map((id) => taskRow(projection, projection.tasks.get(id) as TaskState, now, options));
  return { rows, more: ids.length > limit };
}

/** The `count` least ids above `after`, in order, in one pass (a sorted array of at most count). */
export function firstIdsAfter(ids: Iterable<string>, after: string | undefined, count: number): string[] {
  const kept: string[] = [];
  for (const id of ids) {
    if (after !== undefined && id <= after) continue;
    if (kept.length === count && id >= (kept[count - 1] as string)) continue;
    // Where it goes: after every kept id below it (binary search).
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((kept[mid] as string) < id) lo = mid + 1;
      else hi = mid;
    }
    kept.splice(lo, 0, id);
    if (kept.length > count) kept.pop();
  }
  return kept;
}

export function taskRow(
  projection: SchedulerProjection,
  task: TaskState,
  now: number,
  options: Parameters<typeof explainTask>[3] = { renderProblem: renderProblem(projection) },
): TaskRow {
  const why = explainTask(projection, task.id, now, options);
  return {
    task: task.id,
    status: task.status,
    condition: why.condition,
    logicalDate: task.logicalDate,
    prevIntervalStart: task.prevIntervalStart,
    nextRunDate: task.nextRunDate,
    reasons: why.reasons,
    decision: why.decision,
    nextSteps: why.nextSteps,
  };
}

/**
 * The deadline standing of a task's current interval (due, missed or at risk, the estimate from
 * recent durations, the root cause, the last interval met late), as `why`, `task` and the API
 * show it; null for a task without a deadline.
 */
export function taskDeadline(
  projection: SchedulerProjection,
  task: TaskState,
  now: number,
): DeadlineStanding | null {
  if (!task.spec.deadline) return null;
  return deadlineStanding(projection, projection.durations, task, now, {
    renderProblem: renderProblem(projection),
    alerts: projection.alerts.values(),
  });
}

/** The attempt streams of every interval the task has run or is running, oldest first. */
export async function instanceStreamsOf(log: EventLog, task: TaskState): Promise<string[]> {
  const dates = new Set<string>([task.logicalDate]);
  for (const e of await log.readStream(taskStream(task.key))) {
    if (e.type === "IntervalCompleted" || e.type === "IntervalFailed") dates.add(e.data.logicalDate);
  }
  return [...dates].sort().map((d) => instanceStream(task.key, d));
}

/** The task's events, its stream's and its attempt streams', in log order. */
export async function taskHistory(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
): Promise<RecordedEvent[]> {
  const task = requireTask(projection, id);
  const events: RecordedEvent[] = [...(await log.readStream(taskStream(task.key)))];
  for (const stream of await instanceStreamsOf(log, task)) events.push(...(await log.readStream(stream)));
  // Reports held ahead of the interval the task stands at.
  for (const held of heldReports(task, projection.instances))
    events.push(...(await log.readStream(held.stream)));
  return events.sort((a, b) => (a.position < b.position ? -1 : 1));
}

/** An outside task's interval as its producer reported it, and who did. */
export interface ReportRow {
  readonly logicalDate: string;
  readonly outcome: "succeeded" | "failed";
  readonly by: string;
  readonly reason: string | null;
  readonly at: string;
  /** `in`: the task has completed it (or stopped at it); `awaited`: it stands at it; `held`: ahead of it. */
  readonly standing: "in" | "awaited" | "held";
}

/** The latest reports of an outside task's intervals (at most `limit`), the latest first. */
export async function taskReports(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
  limit = REPORTS_SHOWN,
): Promise<ReportRow[]> {
  const task = requireTask(projection, id);
  if (!isExternal(task.spec)) return [];
  const rows: ReportRow[] = [];
  const held = heldReports(task, projection.instances);
  const streams = [...(await instanceStreamsOf(log, task)), ...held.map((i) => i.stream)].reverse();
  for (const stream of streams) {
    if (rows.length >= limit) break;
    const inst = held.find((i) => i.stream === stream) ?? foldInstance(await log.readStream(stream));
    const r = inst?.reported;
    if (!inst || !r) continue;
    const at = Date.parse(inst.logicalDate);
    const standing =
      at > Date.parse(task.logicalDate)
        ? "held"
        : at === Date.parse(task.logicalDate) && task.failure?.logicalDate !== inst.logicalDate
          ? "awaited"
          : "in";
    rows.push({
      logicalDate: inst.logicalDate,
      outcome: r.outcome,
      by: r.by,
      reason: r.reason,
      at: r.at,
      standing,
    });
  }
  return rows;
}

const REPORTS_SHOWN = 24;

/** An attempt of the task, with its interval and its place in the interval's retry budget. */
export type AttemptRow = BudgetedAttempt & { readonly logicalDate: string; readonly stream: string };

/** Every attempt of the task, oldest interval first. */
export async function taskAttempts(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
): Promise<AttemptRow[]> {
  const task = requireTask(projection, id);
  const rows: AttemptRow[] = [];
  for (const stream of await instanceStreamsOf(log, task)) {
    const inst = foldInstance(await log.readStream(stream));
    for (const a of withBudget(inst?.attempts ?? [], task.spec.retry.maxAttempts, inst?.budgetFrom ?? 0))
      rows.push({ logicalDate: inst?.logicalDate as string, stream, ...a });
  }
  return rows;
}

/** The instance whose current attempt has `token`, among those in flight. */
export function activeInstanceOfToken(
  projection: SchedulerProjection,
  token: string,
): InstanceState | undefined {
  for (const inst of projection.instances.values()) if (currentAttempt(inst)?.token === token) return inst;
  return undefined;
}

/**
 * Where an attempt's output file is on this machine: where it was written, or the data
 * directory's own copy (`<dataDir>/output/<name>`), and only ever a file inside
 * `<dataDir>/output` (symbolic links resolved): a log or export that records a path elsewhere
 * (`outside`) names a file no reader of this data directory may be served.
 */
export function locateOutput(
  a: AttemptView,
  dataDir: string,
): { readonly path: string } | { readonly outside: string } | undefined {
  const recorded = a.outputFile?.path ?? a.outputPath;
  if (!recorded) return undefined;
  let root: string;
  try {
    root = realpathSync(join(dataDir, "output"));
  } catch {
    root = resolve(dataDir, "output");
  }
  const inside = (path: string): string | undefined => {
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      return undefined; // not here
    }
    const rel = relative(root, real);
    return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? real : undefined;
  };
  const here = inside(recorded);
  if (here) return { path: here };
  // The data directory moved, or was copied from the host that ran it.
  const moved = inside(join(root, basename(recorded)));
  if (moved) return { path: moved };
  return existsSync(recorded) ? { outside: recorded } : undefined;
}

/** The path `locateOutput` finds, or undefined (none, or one outside the data directory). */
export function localOutputPath(a: AttemptView, dataDir: string): string | undefined {
  const found = locateOutput(a, dataDir);
  return found && "path" in found ? found.path : undefined;
}

/** Why an attempt's recorded output file is not served: it is outside the data directory. */
export function outsideOutputMessage(recorded: string, dataDir: string): string {
  return `its recorded output file ${recorded} is outside this data directory's output/ (${join(resolve(dataDir), "output")}): not read`;
}
