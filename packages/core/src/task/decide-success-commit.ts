import type { DomainEvent, DomainEventOf } from "../events/catalog.js";
import { type AttemptReportInput, decideReport } from "../instance/decide-report.js";
import { answerHeldAttempt } from "../instance/held-attempt.js";
import { currentAttempt, evolveInstance, type InstanceState } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import { runIdOf } from "../run/state.js";
import { DEFAULT_RETRY, type OperatorSpec } from "../spec.js";
import { instanceStream, taskStream } from "../streams.js";
import { admitTask, decideStanding, type Slots, type TaskView } from "./decide-task.js";
import { intentEvent } from "./intent.js";
import type { QueueRoom } from "./queue-wait.js";
import { evolveTask, type TaskState } from "./state.js";
import { completedInterval } from "./success-path.js";

/*
 * The success commit: what one batch of a worker's reports for an attempt stream writes, in one
 * atomic append. For a success of the task's current interval that is the attempt's end, the
 * interval's completion with the task's advance, and the intents of the children the success
 * lets start; for anything else, the attempt stream's own events. Decided here and nowhere
 * else: the scheduler reads, calls this, appends once, applies and sends.
 */

/** At most this many children start in the append of their parent's success. */
export const MAX_CHILDREN_WITH_SUCCESS = 32;

/** One write of the append: a stream, its events, the revision it must be at. */
export interface CommitWrite {
  readonly streamId: string;
  readonly events: DomainEvent[];
  readonly expectedRevision: bigint | "no_stream";
}

/** What the view must hold beyond a task's standing: the children of each task. */
export interface SuccessCommitView extends TaskView {
  readonly children: { of(taskId: string): Iterable<string>; count(taskId: string): number };
  hasCacheKey(taskId: string, key: string): boolean;
}

/**
 * What deciding the children needs of the scheduler beyond the view: its own counts and
 * choices, which live in its memory, and the render of a payload (not the core's).
 */
export interface ChildStarter {
  /** Whether this scheduler may start the child now (it decides for it; nothing of it is in flight). */
  startable(child: TaskState): boolean;
  /** Slots of the run in use as this scheduler counts them (its reservations too), `except`'s aside. */
  runSlotsTaken(runId: string, except: string): number;
  /** Whether a task of the workflow waits for a slot of its run at `logicalDate` (it goes first). */
  waitsForRunSlot(workflow: string, logicalDate: string): boolean;
  /** The child's operator rendered for its interval, and its cache key; throws when it does not render. */
  render(child: TaskState): { readonly operator: OperatorSpec; readonly cacheKey: string | undefined };
  /** A new dispatch token. */
  newToken(): string;
  /**
   * The remote workers serving a queue and their slots in use, as the scheduler's dispatcher
   * knows them; absent: a child of a queue is left to the pass.
   */
  queueRoom?(queue: string): QueueRoom;
}

export interface SuccessCommitInput {
  /** The attempt stream the reports are for. */
  readonly stream: string;
  /** Its state as known (undefined: the stream does not exist). */
  readonly instance: InstanceState | undefined;
  /** The reports, in the order they arrived. */
  readonly reports: readonly AttemptReportInput[];
  /** Epoch milliseconds, and a number in [0, 1) for retry jitter: from the shell. */
  readonly now: number;
  readonly random: number;
  /** Whether a success advances the task in the same append (false once its stream moved on). */
  readonly advance: boolean;
  /** How children start with a success (null: they are left to the pass). */
  readonly children: ChildStarter | null;
}

/** A child whose first attempt is written with its parent's success. */
export interface ChildStart {
  readonly task: TaskState;
  /** The run whose slot it takes, when it is of a workflow. */
  readonly runId: string | null;
  readonly attempt: number;
  readonly token: string;
  readonly operator: OperatorSpec;
}

/**
 * What a worker is told once the append is made: `proceed` (its start is durable: an attempt
 * that waits for its start permission may run), or `stop` (it is not, or no longer, the current attempt).
 */
export interface WorkerAnswer {
  readonly token: string;
  readonly answer: "proceed" | "stop";
}

export interface SuccessCommit {
  /** The append: the attempt stream's events first, then the task's advance, then each child's intent. */
  readonly writes: readonly CommitWrite[];
  /** The attempt stream once the append is made. */
  readonly after: InstanceState | undefined;
  /** The task's advance, when the append holds one. */
  readonly completed: { readonly task: TaskState; readonly event: DomainEventOf<"IntervalCompleted"> } | null;
  /** The children started, in the order of their writes (after the first two). */
  readonly children: readonly ChildStart[];
  /** What the workers that sent the reports are told, in the order of the reports. */
  readonly answers: readonly WorkerAnswer[];
  /** Leases the reports renew (a start or a heartbeat of the current attempt): token -> until (ms). */
  readonly leases: ReadonlyMap<string, number>;
  /** Tokens of attempts that ended (their leases are over). */
  readonly ended: readonly string[];
}

/** Decides one batch of reports for one attempt stream (see the file's comment). */
export function decideSuccessCommit(view: SuccessCommitView, input: SuccessCommitInput): SuccessCommit {
  const { instance, reports, now } = input;
  const task = instance ? view.tasks.get(formatTaskKey(instance.key)) : undefined;
  const { events, after } = decideReports(instance, reports, {
    now,
    random: input.random,
    retry: task?.spec.retry ?? DEFAULT_RETRY,
  });
  const answers = answersOf(reports, events, after);
  const leases = new Map<string, number>();
  const current = after ? currentAttempt(after) : undefined;
  for (const r of reports)
    if (
      (r.kind === "started" || r.kind === "heartbeat") &&
      current?.token === r.token &&
      (current.status === "running" || current.status === "queued")
    )
      leases.set(r.token, now + (after?.leaseSeconds ?? 30) * 1000);
  const ended = reports.flatMap((r) => (r.kind === "succeeded" || r.kind === "failed" ? [r.token] : []));
  const base = { after, answers, leases, ended };
  if (events.length === 0) return { ...base, writes: [], completed: null, children: [] };
  const writes: CommitWrite[] = [
    { streamId: input.stream, events, expectedRevision: instance ? instance.revision : "no_stream" },
  ];
  const completed =
    input.advance && task && after && task.status !== "retired" ? completionOrNone(task, after) : null;
  if (!task || !completed) return { ...base, writes, completed: null, children: [] };
  writes.push({ streamId: taskStream(task.key), events: [completed], expectedRevision: task.revision });
  const children = input.children ? childrenToStart(view, task, completed, input.children, now) : [];
  for (const c of children)
    writes.push({
      streamId: instanceStream(c.task.key, c.task.logicalDate),
      events: [c.event],
      expectedRevision: "no_stream",
    });
  return { ...base, writes, completed: { task, event: completed }, children };
}

/**
 * The completion, or none when the task's schedule cannot be advanced: the attempt's outcome is
 * then written alone, and the task's standing says why it does not move.
 */
function completionOrNone(task: TaskState, after: InstanceState): DomainEventOf<"IntervalCompleted"> | null {
  try {
    return completedInterval(task, after);
  } catch {
    return null;
  }
}

/**
 * The reports folded one after another into the attempt stream's events. A start and a success
 * of the same attempt in one batch: the success says it all (it names the worker), unless the
 * attempt waits for its start permission (not idempotent): its start is always written first: it runs only after.
 * Only a success: a failure must know the attempt started (a lost worker is then retried within
 * its bounds, not as an attempt that never ran).
 */
function decideReports(
  initial: InstanceState | undefined,
  reports: readonly AttemptReportInput[],
  ctx: { now: number; random: number; retry: typeof DEFAULT_RETRY },
): { events: DomainEvent[]; after: InstanceState | undefined } {
  let state = initial;
  const out: DomainEvent[] = [];
  let revision = state?.revision ?? -1n;
  const ending = new Set(reports.filter((r) => r.kind === "succeeded").map((r) => r.token));
  const outcomes = outcomesIn(reports);
  const recordedAt = new Date(ctx.now).toISOString();
  for (const report of reports) {
    if (report.kind === "started" && ending.has(report.token) && state?.idempotent) continue;
    // A heartbeat before its attempt's outcome in the batch says nothing the outcome does not.
    if (report.kind === "heartbeat" && outcomes.has(report.token)) continue;
    for (const e of decideReport(state, report, ctx)) {
      out.push(e);
      revision += 1n;
      state = evolveInstance(state, e, {
        revision,
        position: -1n,
        recordedAt,
        streamId: state?.stream ?? "",
      });
    }
  }
  return { events: out, after: state };
}

/**
 * What the workers are told of their reports once the append is made (see WorkerAnswer): a
 * rejected start or heartbeat, `stop`; otherwise what `answerHeldAttempt` says of the attempt as
 * the append leaves it, at every start and heartbeat (a permission lost with a killed scheduler
 * or a broken link comes again with the next heartbeat). Nothing for an attempt whose outcome is
 * in the batch; one answer per attempt.
 */
function answersOf(
  reports: readonly AttemptReportInput[],
  events: readonly DomainEvent[],
  after: InstanceState | undefined,
): WorkerAnswer[] {
  const rejected = new Set(
    events.flatMap((e) => (e.type === "CompletionRejected" ? [`${e.data.report}:${e.data.token}`] : [])),
  );
  const outcomes = outcomesIn(reports);
  const out: WorkerAnswer[] = [];
  const told = new Set<string>();
  for (const r of reports) {
    if (r.kind !== "started" && r.kind !== "heartbeat") continue;
    const { token } = r;
    if (told.has(token) || outcomes.has(token)) continue;
    const answer = rejected.has(`${r.kind}:${token}`) ? "stop" : answerHeldAttempt(after, token);
    if (answer === "none") continue;
    told.add(token);
    out.push({ token, answer });
  }
  return out;
}

/** The tokens of the attempts whose outcome the batch holds. */
function outcomesIn(reports: readonly AttemptReportInput[]): Set<string> {
  return new Set(reports.flatMap((r) => (r.kind === "succeeded" || r.kind === "failed" ? [r.token] : [])));
}

/**
 * The children a success starts in its own commit, each decided by `decideStanding` and
 * `admitTask` on the view as it will be once the success is applied. Only the plain case goes
 * this way: a first attempt of a due child that the starter may start, with no connection, not
 * being backfilled and with no attempt stream yet, of no workflow or of the parent's own
 * running run with a free slot (and no task of that run waiting for one), of no worker queue or of
 * one with a free slot on a connected worker (counting the children started here), whose payload
 * renders and is no cache hit. Every other child is left to the scheduler's pass.
 */
function childrenToStart(
  view: SuccessCommitView,
  task: TaskState,
  completed: DomainEventOf<"IntervalCompleted">,
  starter: ChildStarter,
  now: number,
): Array<ChildStart & { readonly event: DomainEvent }> {
  const advanced = evolveTask(task, completed, { revision: task.revision + 1n, position: -1n });
  if (!advanced) return [];
  const ahead = new Map([[task.id, advanced]]);
  const parentRun = task.spec.workflow ? runIdOf(task.spec.workflow, completed.data.logicalDate) : null;
  // Slots taken by the children started here; the parent's own slot in its run is free.
  const going = new Map<string, number>();
  const goingToQueue = new Map<string, number>();
  const queueRoom = starter.queueRoom?.bind(starter);
  const slots: Slots = {
    connectionInUse: () => 0,
    runSlotsInUse: (runId) => going.get(runId) ?? starter.runSlotsTaken(runId, task.id),
    // A run that is not going is the pass's to start.
    activeRuns: () => Number.POSITIVE_INFINITY,
    runStarting: () => false,
    ...(queueRoom
      ? {
          queueRoom: (queue: string) => {
            const room = queueRoom(queue);
            return { ...room, busy: room.busy + (goingToQueue.get(queue) ?? 0) };
          },
        }
      : {}),
  };
  const out: Array<ChildStart & { readonly event: DomainEvent }> = [];
  // The task's own next interval first, as it stands once advanced: due already when the task
  // catches up (or backfills), and then started here like a child, not by the next pass.
  const candidates = view.children.count(task.id) === 0 ? [task.id] : [task.id, ...view.children.of(task.id)];
  for (const id of candidates) {
    // A wide fan-out is the pass's: an append stays small, and so does the time to decide it.
    if (out.length === MAX_CHILDREN_WITH_SUCCESS) break;
    const child = id === task.id ? advanced : view.tasks.get(id);
    if (!child || !plain(view, child, starter)) continue;
    const standing = decideStanding(view, child, now, { ahead });
    if (standing.kind !== "ready" || standing.retry) continue;
    const d = admitTask(view, child, standing, slots);
    if (d.kind !== "ready") continue;
    if (d.run) {
      if (d.run.runId !== parentRun || d.run.start !== null || !view.workflows.has(d.run.workflow)) continue;
      // The pass gives a free slot to the task that waited longest.
      if (starter.waitsForRunSlot(d.run.workflow, child.logicalDate)) continue;
    }
    let rendered: ReturnType<ChildStarter["render"]>;
    try {
      rendered = starter.render(child);
    } catch {
      continue; // the pass holds the task and says why
    }
    const { operator, cacheKey } = rendered;
    if (cacheKey !== undefined && view.hasCacheKey(child.id, cacheKey)) continue;
    const token = starter.newToken();
    if (d.run) going.set(d.run.runId, slots.runSlotsInUse(d.run.runId, undefined) + 1);
    const queue = child.spec.queue;
    if (queue !== undefined) goingToQueue.set(queue, (goingToQueue.get(queue) ?? 0) + 1);
    out.push({
      task: child,
      runId: d.run?.runId ?? null,
      attempt: 1,
      token,
      operator,
      event: intentEvent(child, 1, token, operator, cacheKey),
    });
  }
  return out;
}

/** The cases only the pass decides: a connection's slot, a backfill, an interval that ran before. */
function plain(view: TaskView, child: TaskState, starter: ChildStarter): boolean {
  return (
    !child.spec.connection &&
    // (A task of a worker queue waits for a free slot on one: without the workers' room at
    // hand, the pass admits it.)
    (child.spec.queue === undefined || starter.queueRoom !== undefined) &&
    // (A backfill goes back over intervals that may have run before: the pass reads those.)
    child.backfill === null &&
    starter.startable(child) &&
    !view.instances.has(instanceStream(child.key, child.logicalDate))
  );
}
