import {
  currentAttempt,
  type DomainEvent,
  evolveRun,
  firstSlotAtOrAfter,
  foldInstance,
  type InstanceState,
  instanceStream,
  lastSlotEndingBy,
  nextCronTime,
  parseInstant,
  prevCronTime,
  type RunState,
  runIdOf,
  runStream,
  type SchedulerProjection,
  type TaskState,
  taskStream,
  ValidationError,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { NotFoundError, StateError } from "./errors.js";
import { requireSettled } from "./operations.js";

export interface RunView {
  readonly run: RunState;
  readonly instances: ReadonlyArray<{ task: string; instance: InstanceState | undefined }>;
}

/** A run and its instances, read from their streams (so old runs can be shown too). */
export async function describeRun(
  log: EventLog,
  projection: SchedulerProjection,
  runId: string,
): Promise<RunView> {
  let run: RunState | undefined;
  for (const e of await log.readStream(runStream(runId))) {
    run = evolveRun(run, e, { revision: e.revision, recordedAt: e.metadata.recordedAt });
  }
  if (!run) throw new NotFoundError(`no run ${runId}`);
  const live = projection.runs.get(runId);
  const instances = await Promise.all(
    run.tasks.map(async (task) => {
      const key = projection.tasks.get(task)?.key;
      const inst = key ? foldInstance(await log.readStream(instanceStream(key, run.logicalDate))) : undefined;
      return { task, instance: inst };
    }),
  );
  const outcomes = { ...(live?.outcomes ?? run.outcomes) };
  for (const { task, instance } of instances) if (instance) outcomes[task] = instance.status;
  return { run: { ...run, outcomes }, instances };
}

export function listRuns(projection: SchedulerProjection, workflow?: string): RunState[] {
  return [...projection.runs.values()]
    .filter((r) => !workflow || r.workflow === workflow)
    .sort((a, b) => b.logicalDate.localeCompare(a.logicalDate) || a.runId.localeCompare(b.runId));
}

function workflowTasks(projection: SchedulerProjection, workflow: string): TaskState[] {
  return [...projection.tasks.values()].filter((t) => t.spec.workflow === workflow && t.status !== "retired");
}

/** Sets each task back to `logicalDate` for one interval, returning afterwards to where it was. */
function resetForOneInterval(task: TaskState, logicalDate: string): DomainEvent {
  const ahead = Date.parse(task.logicalDate) > Date.parse(logicalDate);
  const prev = new Date(Date.parse(logicalDate) - 1);
  return {
    type: "IntervalReset",
    data: {
      key: task.key,
      logicalDate,
      // Due when its interval ends, as on the schedule (always in the past here).
      nextRunDate: nextCronTime(task.spec.cron, task.spec.timezone, new Date(logicalDate)).toISOString(),
      prevIntervalStart: prevCronTime(task.spec.cron, task.spec.timezone, prev).toISOString(),
      reason: "operator",
      until: logicalDate,
      ...(ahead
        ? {
            resume: {
              logicalDate: task.logicalDate,
              nextRunDate: task.nextRunDate,
              prevIntervalStart: task.prevIntervalStart,
            },
          }
        : {}),
    },
  };
}

/**
 * Re-executes a run's tasks: with `failedOnly`, just the instances that did not succeed (failed,
 * upstream_failed, cancelled, abandoned) and, through them, their descendants; the tasks that
 * succeeded are kept. The run is reopened (RunStarted, trigger `rerun`) for the tasks rerun.
 */
export async function rerun(
  log: EventLog,
  projection: SchedulerProjection,
  runId: string,
  failedOnly: boolean,
): Promise<{ tasks: string[] }> {
  const view = await describeRun(log, projection, runId);
  const { run } = view;
  if (run.status === "running") throw new StateError(`run ${runId} is still running`);
  const chosen = view.instances.filter(
    ({ instance }) =>
      !failedOnly ||
      (instance !== undefined && instance.status !== "success" && instance.status !== "skipped"),
  );
  if (chosen.length === 0) throw new StateError(`run ${runId} has nothing to rerun`);
  const tasks = chosen.map((c) => projection.tasks.get(c.task)).filter((t): t is TaskState => !!t);
  requireSettled(projection, tasks);
  await writeRunAndResets(
    log,
    run.revision,
    {
      type: "RunStarted",
      data: {
        runId,
        workflow: run.workflow,
        logicalDate: run.logicalDate,
        tasks: tasks.map((t) => t.key),
        trigger: "rerun",
        params: {},
      },
    },
    tasks,
    run.logicalDate,
  );
  return { tasks: tasks.map((t) => t.id) };
}

/**
 * Starts a run of a workflow outside its schedule, for the interval starting at `logicalDate`
 * (default: the latest interval that has ended), with parameters templates see as `params`:
 * the workflow's declared params, each at its default unless `params` gives it. A param the
 * workflow does not declare is refused (ValidationError naming the declared ones), before
 * anything is written. The run's RunStarted records the params merged so.
 */
export async function trigger(
  log: EventLog,
  projection: SchedulerProjection,
  workflow: string,
  at: string | undefined,
  params: Record<string, string>,
  nowMs: number,
): Promise<{ runId: string; logicalDate: string; tasks: string[] }> {
  const spec = projection.workflows.get(workflow);
  if (!spec) throw new NotFoundError(`no workflow ${workflow} is declared`);
  const declared: Readonly<Record<string, string>> = spec.params ?? {};
  const unknown = Object.keys(params).filter((k) => !Object.hasOwn(declared, k));
  if (unknown.length > 0) {
    const names = Object.keys(declared).sort();
    const known = names.length > 0 ? `its params are ${names.join(", ")}` : "it declares no params";
    throw new ValidationError(
      "trigger",
      unknown.map((k) => ({
        path: `--param ${k}`,
        message: `workflow ${workflow} has no param "${k}" (${known})`,
      })),
    );
  }
  const runParams = { ...declared, ...params };
  const tasks = workflowTasks(projection, workflow);
  const first = tasks[0];
  if (!first) throw new StateError(`workflow ${workflow} has no tasks`);
  const when = at
    ? parseInstant(at, "--logical-date")
    : lastSlotEndingBy(first.spec.cron, first.spec.timezone, new Date(nowMs));
  const slot = prevCronTime(first.spec.cron, first.spec.timezone, when);
  const end = nextCronTime(first.spec.cron, first.spec.timezone, slot);
  if (end.getTime() > nowMs) {
    throw new ValidationError("trigger", [
      {
        path: "--logical-date",
        message: `the interval ${slot.toISOString()} is not over until ${end.toISOString()}`,
      },
    ]);
  }
  if (at && slot.getTime() !== when.getTime()) {
    const next = firstSlotAtOrAfter(first.spec.cron, first.spec.timezone, when);
    throw new ValidationError("trigger", [
      {
        path: "--logical-date",
        message: `${at} is not a slot of ${first.spec.cron} (${first.spec.timezone}); the nearest are ${slot.toISOString()} and ${next.toISOString()}`,
      },
    ]);
  }
  const logicalDate = slot.toISOString();
  const runId = runIdOf(workflow, logicalDate);
  const existing = projection.runs.get(runId);
  if (existing?.status === "running") throw new StateError(`run ${runId} is already running`);
  const revision = existing ? existing.revision : await log.streamRevision(runStream(runId));
  requireSettled(projection, tasks);
  await writeRunAndResets(
    log,
    revision,
    {
      type: "RunStarted",
      data: {
        runId,
        workflow,
        logicalDate,
        tasks: tasks.map((t) => t.key),
        trigger: "manual",
        params: runParams,
      },
    },
    tasks,
    logicalDate,
  );
  return { runId, logicalDate, tasks: tasks.map((t) => t.id) };
}

/**
 * The run's (re)start and its tasks' resets, in one atomic write where the log offers it, so a
 * run is never opened for tasks that were not set back to its date.
 */
async function writeRunAndResets(
  log: EventLog,
  runRevision: bigint | "no_stream",
  started: DomainEvent,
  tasks: readonly TaskState[],
  logicalDate: string,
): Promise<void> {
  const runId = (started.data as { runId: string }).runId;
  const resets = tasks.map((t) => ({
    streamId: taskStream(t.key),
    events: [resetForOneInterval(t, logicalDate)],
    expectedRevision: t.revision as bigint | "no_stream",
  }));
  if (log.supportsAppendMany) {
    await log.appendMany([
      { streamId: runStream(runId), events: [started], expectedRevision: runRevision },
      ...resets,
    ]);
    return;
  }
  await log.append(runStream(runId), [started], { expectedRevision: runRevision });
  await Promise.all(
    resets.map((r) => log.append(r.streamId, r.events, { expectedRevision: r.expectedRevision })),
  );
}

export interface CriticalLink {
  readonly task: string;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly durationMs: number;
  /** Wait between the previous link's end and this task's start. */
  readonly waitMs: number;
}

export interface CriticalPath {
  readonly links: readonly CriticalLink[];
  readonly pathMs: number;
  readonly wallMs: number;
  readonly gapMs: number;
}

/**
 * The chain of "last parent to finish" links from the task that finished last back to the
 * first (why a run took as long as it did): the run's real critical path, and the gap between the run's
 * wall time and it (time lost to anything but the tasks themselves).
 */
export function criticalPath(view: RunView, parentsOf: (task: string) => readonly string[]): CriticalPath {
  const times = new Map<string, { start: number; end: number; startedAt: string; endedAt: string }>();
  let runStart = Number.POSITIVE_INFINITY;
  for (const { task, instance } of view.instances) {
    const a = instance && currentAttempt(instance);
    if (!a?.startedAt || !a.endedAt) continue;
    const start = Date.parse(a.startedAt);
    const end = Date.parse(a.endedAt);
    times.set(task, { start, end, startedAt: a.startedAt, endedAt: a.endedAt });
    runStart = Math.min(runStart, Date.parse(a.intendedAt));
  }
  if (times.size === 0) throw new StateError(`run ${view.run.runId} has no finished attempts`);
  let last = [...times.entries()].sort((a, b) => b[1].end - a[1].end)[0] as [
    string,
    { start: number; end: number; startedAt: string; endedAt: string },
  ];
  const chain: Array<[string, { start: number; end: number; startedAt: string; endedAt: string }]> = [last];
  const inRun = new Set(view.run.tasks);
  for (;;) {
    const parents = parentsOf(last[0]).filter((p) => inRun.has(p) && times.has(p));
    if (parents.length === 0) break;
    const latest = parents
      .map((p) => [p, times.get(p)] as const)
      .sort((a, b) => (b[1]?.end ?? 0) - (a[1]?.end ?? 0))[0];
    if (!latest?.[1]) break;
    last = [latest[0], latest[1]];
    chain.unshift(last);
  }
  const links: CriticalLink[] = chain.map(([task, t], i) => ({
    task,
    startedAt: t.startedAt,
    endedAt: t.endedAt,
    durationMs: t.end - t.start,
    waitMs: i === 0 ? t.start - runStart : t.start - (chain[i - 1]?.[1].end ?? t.start),
  }));
  const pathMs = links.reduce((sum, l) => sum + l.durationMs, 0);
  const wallMs = Math.max(...[...times.values()].map((t) => t.end)) - runStart;
  return { links, pathMs, wallMs, gapMs: wallMs - pathMs };
}
