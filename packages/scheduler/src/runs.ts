import {
  type BudgetedAttempt,
  dateArg,
  type EventDataOf,
  evolveRun,
  foldInstance,
  formatTaskKey,
  type InstanceState,
  type InstanceStatus,
  instanceStream,
  planRerun,
  planTrigger,
  type RunPlan,
  type RunPlanDecision,
  type RunState,
  type RunStatus,
  type RunSummary,
  type RunTaskState,
  type RunTrigger,
  runIdOf,
  runStream,
  type SchedulerProjection,
  summarizeRun,
  triggerDate,
  withBudget,
} from "@chronolog/core";
import { type EventLog, type RecordedEvent, WrongExpectedRevisionError } from "@chronolog/log";
import { ConflictRetriesExhaustedError } from "./command.js";
import { NotFoundError, StateError } from "./errors.js";
import { refusalError } from "./operations.js";
import { catchUp } from "./projection-loader.js";
import { standingChecks } from "./standing-checks.js";

/** A run as its stream holds it, and the stream's revision. */
export interface RunRead {
  readonly run: RunState | undefined;
  readonly revision: bigint | "no_stream";
}

/** Folds a run's stream from the log (a run the projection no longer holds, too). */
export async function readRun(log: EventLog, runId: string): Promise<RunRead> {
  return foldRun(await log.readStream(runStream(runId)));
}

function foldRun(events: readonly RecordedEvent[]): RunRead {
  let run: RunState | undefined;
  for (const e of events) {
    run = evolveRun(run, e, {
      revision: e.revision,
      recordedAt: e.metadata.recordedAt,
      actor: e.metadata.actor,
    });
  }
  const last = events.at(-1);
  return { run, revision: last ? last.revision : "no_stream" };
}

/** One try of a run: its first start, or a rerun, trigger or backfill of its date after it. */
export interface RunTry {
  readonly try: number;
  readonly trigger: RunTrigger;
  /** Who started it (who asked, for a backfill the scheduler carried out). */
  readonly actor: string | null;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly status: RunStatus;
  /** The tasks that ran (again) in it. */
  readonly tasks: readonly string[];
  /** Log position of its RunStarted: attempts intended after it (and before the next) are its. */
  readonly position: bigint;
}

export interface RunView {
  /** The run, its `outcomes` those of the try shown. */
  readonly run: RunState;
  /** The run's state, its tasks' states and counts, and why it waits, as of the try shown. */
  readonly summary: RunSummary;
  /** Every try, the first first. */
  readonly tries: readonly RunTry[];
  /** The try `instances` show the attempts of (the latest unless another was asked for). */
  readonly try: number;
  readonly instances: ReadonlyArray<{
    task: string;
    /** Its state in the try shown (the summary's). */
    state: RunTaskState;
    /** The try shown did not run it again: its earlier outcome stands. */
    kept: boolean;
    instance: InstanceState | undefined;
    /** The attempts the task made in the try shown. */
    attempts: readonly BudgetedAttempt[];
  }>;
}

/** The tries of a run, from its stream: each RunStarted starts one, a RunFinished ends it. */
function triesOf(events: readonly RecordedEvent[]): RunTry[] {
  const tries: RunTry[] = [];
  for (const e of events) {
    if (e.type === "RunStarted") {
      const d = e.data as EventDataOf<"RunStarted">;
      tries.push({
        try: d.try ?? tries.length + 1,
        trigger: d.trigger,
        actor: d.requestedBy ?? e.metadata.actor ?? null,
        startedAt: e.metadata.recordedAt,
        finishedAt: null,
        status: "running",
        tasks: d.tasks.map(formatTaskKey),
        position: e.position,
      });
    } else if (e.type === "RunFinished") {
      const last = tries.at(-1);
      if (last && last.finishedAt === null)
        tries[tries.length - 1] = {
          ...last,
          finishedAt: e.metadata.recordedAt,
          status: (e.data as EventDataOf<"RunFinished">).state,
        };
    }
  }
  return tries;
}

/**
 * A run with its tries, and its instances with the attempts of one try (default: the latest),
 * read from their streams (so old runs can be shown too). An attempt belongs to the try whose
 * RunStarted precedes its DispatchIntended in the log.
 */
export async function describeRun(
  log: EventLog,
  projection: SchedulerProjection,
  runId: string,
  tryNumber?: number,
): Promise<RunView> {
  const events = await log.readStream(runStream(runId));
  const { run } = foldRun(events);
  if (!run) throw new NotFoundError(`no run ${runId}`);
  const tries = triesOf(events);
  const shown = tryNumber === undefined ? tries.at(-1) : tries.find((t) => t.try === tryNumber);
  if (!shown)
    throw new NotFoundError(
      `run ${runId} has no try ${tryNumber} (tries: ${tries.map((t) => t.try).join(", ") || "none"})`,
    );
  const next = tries[tries.indexOf(shown) + 1];
  const ranInTry = new Set(shown.tasks);
  const outcomes: Record<string, InstanceStatus> = {};
  const rows = await Promise.all(
    run.tasks.map(async (task) => {
      const t = projection.tasks.get(task);
      if (!t) return { task, instance: undefined, attempts: [], kept: !ranInTry.has(task) };
      // The interval's stream as it stood at the end of the try shown.
      const whole = await log.readStream(instanceStream(t.key, run.logicalDate));
      const stream = next ? whole.filter((e) => e.position < next.position) : whole;
      const intended = new Map<string, bigint>();
      for (const e of stream)
        if (e.type === "DispatchIntended") intended.set((e.data as { token: string }).token, e.position);
      const instance = foldInstance(stream);
      // A task the try ran counts from what the try did for it (an attempt, or a close without
      // running); one it kept, from its outcome before.
      const kept = !ranInTry.has(task);
      const touched = stream.some((e) => e.position > shown.position && e.type !== "CompletionRejected");
      if (instance && (kept || touched)) outcomes[task] = instance.status;
      const attempts = withBudget(
        instance?.attempts ?? [],
        t.spec.retry.maxAttempts,
        instance?.budgetFrom ?? 0,
      ).filter((a) => (intended.get(a.token) ?? -1n) > shown.position);
      return { task, instance: foldInstance(whole), attempts, kept };
    }),
  );
  const marked: Record<string, "success" | "skipped"> = {};
  for (const { task, instance } of rows) if (instance?.marked) marked[task] = instance.marked.outcome;
  const { marked: _, ...rest } = run;
  const shownRun: RunState = {
    ...rest,
    outcomes,
    ...(Object.keys(marked).length > 0 ? { marked } : {}),
    ...(next ? { status: shown.status, try: shown.try, trigger: shown.trigger, actor: shown.actor } : {}),
    ...(next ? { startedAt: shown.startedAt, finishedAt: shown.finishedAt } : {}),
  };
  const summary = summarizeRun(shownRun, projection.tasks);
  const instances = rows.map((r) => ({ ...r, state: summary.tasks[r.task] ?? ("pending" as const) }));
  return { run: shownRun, summary, tries, try: shown.try, instances };
}

/** A run with its summary: what the runs list shows of each. */
export type RunListed = RunState & { readonly summary: RunSummary; readonly blockedBy: readonly string[] };

/** The runs the projection holds (in progress and recent), newest logical date first, each with its summary. */
export function listRuns(projection: SchedulerProjection, workflow?: string): RunListed[] {
  return [...projection.runs.values()]
    .filter((r) => !workflow || r.workflow === workflow)
    .sort((a, b) => b.logicalDate.localeCompare(a.logicalDate) || a.runId.localeCompare(b.runId))
    .map((r) => {
      const summary = summarizeRun(r, projection.tasks);
      return { ...r, summary, blockedBy: summary.waiting };
    });
}

/** What a rerun or trigger did (or, dry, would do): its plan, and whether it was written. */
export interface RunOperation extends RunPlan {
  readonly dryRun?: boolean;
}

/**
 * Re-executes a run's tasks: with `failedOnly`, just the instances that did not succeed (failed,
 * upstream_failed, cancelled, abandoned) and, through them, their descendants; the tasks that
 * succeeded are kept. The run is reopened (RunStarted, trigger `rerun`) for the tasks rerun. What
 * it does is planRerun's decision, the same for a dry run (nothing written) as for the real one.
 */
export function rerun(
  log: EventLog,
  projection: SchedulerProjection,
  runId: string,
  failedOnly: boolean,
  options: { readonly dryRun?: boolean } = {},
): Promise<RunOperation> {
  return decidingAgainOnConflict(log, projection, `rerun ${runId}`, async () => {
    const view = await describeRun(log, projection, runId);
    const statuses = new Map(view.instances.map((i) => [i.task, i.instance?.status] as const));
    const decided = planRerun(projection, {
      run: view.run,
      revision: view.run.revision,
      statuses,
      failedOnly,
    });
    return carryOut(log, projection, "rerun", decided, options);
  });
}

/** Conflicts a rerun or trigger decides again after, before it gives up. */
const CONFLICT_RETRIES = 5;

/**
 * Runs a read-decide-write step; when another writer changed a stream it writes first (a
 * compare-and-set conflict), catches the projection up with the log and decides again, which
 * may now refuse (the run was started meanwhile).
 */
async function decidingAgainOnConflict<T>(
  log: EventLog,
  projection: SchedulerProjection,
  name: string,
  step: () => Promise<T>,
): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await step();
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      if (tries >= CONFLICT_RETRIES) throw new ConflictRetriesExhaustedError(name, tries + 1, error);
      await catchUp(log, projection);
    }
  }
}

/**
 * A planned run's (re)start and its tasks' resets, in one atomic write, so a run is never opened
 * for tasks that were not set back to its date; nothing at all for a dry run.
 */
async function carryOut(
  log: EventLog,
  projection: SchedulerProjection,
  operation: string,
  decided: RunPlanDecision,
  options: { readonly dryRun?: boolean },
): Promise<RunOperation> {
  if (decided.kind === "refused") throw refusalError(operation, decided);
  if (options.dryRun) return { ...decided.plan, dryRun: true };
  const writes = decided.writes.map((w) => ({ ...w }));
  await log.appendMany(writes, { checks: await standingChecks(log, projection, writes) });
  return decided.plan;
}

/**
 * Starts a run of a workflow outside its schedule, for the interval `at` names (a day: the one
 * interval that starts on it in the workflow's zone; default: the latest interval that has
 * ended), with parameters templates see as `params`: the workflow's declared params, each at its
 * default unless `params` gives it. It starts exactly that run, or is refused naming what stands
 * in the way (see planTrigger), before anything is written; a dry run writes nothing either way.
 */
export function trigger(
  log: EventLog,
  projection: SchedulerProjection,
  workflow: string,
  at: string | undefined,
  params: Record<string, string>,
  nowMs: number,
  options: { readonly dryRun?: boolean } = {},
): Promise<RunOperation> {
  const when = at === undefined ? undefined : dateArg(at, "--logical-date");
  return decidingAgainOnConflict(log, projection, `trigger ${workflow}`, async () => {
    if (options.dryRun) await catchUp(log, projection);
    const date = triggerDate(projection, workflow, when, nowMs);
    if (date.kind === "refused") throw refusalError("trigger", date);
    const runId = runIdOf(workflow, date.logicalDate);
    // (A run the projection no longer holds is read from the log: its tries are counted.)
    const held = projection.runs.get(runId);
    const existing = held ? { run: held, revision: held.revision } : await readRun(log, runId);
    const decided = planTrigger(projection, { workflow, logicalDate: date.logicalDate, params, existing });
    return carryOut(log, projection, "trigger", decided, options);
  });
}

export interface CriticalLink {
  readonly task: string;
  /** The start of its first attempt in the try. */
  readonly startedAt: string;
  /** The end of its last attempt in the try. */
  readonly endedAt: string;
  readonly durationMs: number;
  /** Wait between the previous link's end (the try's start, for the first) and this task's start. */
  readonly waitMs: number;
  /** Attempts it made in the try (more than one: its retries are in its duration). */
  readonly attempts: number;
}

export interface CriticalPath {
  /** The try it is the path of. */
  readonly try: number;
  readonly links: readonly CriticalLink[];
  readonly pathMs: number;
  readonly wallMs: number;
  readonly gapMs: number;
}

interface Span {
  readonly start: number;
  readonly end: number;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly attempts: number;
}

/**
 * The chain of "last parent to finish" links from the task that finished last back to the
 * first (why a try of a run took as long as it did), over the attempts of the try the view
 * shows, from the try's start; and the gap between the try's wall time and it (time lost to
 * anything but the tasks themselves). A task the try did not run (kept from an earlier try)
 * ends the chain: it was done before the try began.
 */
export function criticalPath(view: RunView, parentsOf: (task: string) => readonly string[]): CriticalPath {
  const shown = view.tries.find((t) => t.try === view.try);
  const times = new Map<string, Span>();
  for (const { task, attempts } of view.instances) {
    const ran = attempts.filter((a) => a.startedAt && a.endedAt);
    const first = ran[0];
    const last = ran.at(-1);
    if (!first?.startedAt || !last?.endedAt) continue;
    times.set(task, {
      start: Date.parse(first.startedAt),
      end: Date.parse(last.endedAt),
      startedAt: first.startedAt,
      endedAt: last.endedAt,
      attempts: ran.length,
    });
  }
  if (times.size === 0 || !shown)
    throw new StateError(`run ${view.run.runId} has no finished attempts in try ${view.try}`);
  // (Not Math.min/max over a spread: spread into a call, a run of very many tasks overflows the
  // stack.)
  let runStart = Date.parse(shown.startedAt);
  let lastEnd = Number.NEGATIVE_INFINITY;
  for (const t of times.values()) {
    if (t.start < runStart) runStart = t.start;
    if (t.end > lastEnd) lastEnd = t.end;
  }
  let last = [...times.entries()].sort((a, b) => b[1].end - a[1].end)[0] as [string, Span];
  const chain: Array<[string, Span]> = [last];
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
    attempts: t.attempts,
  }));
  const pathMs = links.reduce((sum, l) => sum + l.durationMs, 0);
  const wallMs = lastEnd - runStart;
  return { try: view.try, links, pathMs, wallMs, gapMs: wallMs - pathMs };
}
