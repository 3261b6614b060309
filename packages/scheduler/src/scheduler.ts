import { randomUUID } from "node:crypto";
import {
  connectionStream,
  type DomainEvent,
  type DomainEventOf,
  dataInterval,
  decideIntervalCompleted,
  decideIntervalFailed,
  decideRun,
  describeGateReason,
  evolveTask,
  formatTaskKey,
  gateFor,
  type InstanceState,
  instanceStream,
  isTerminal,
  lastSlotEndingBy,
  nextCronTime,
  type OperatorSpec,
  parseTaskKey,
  type RunState,
  runIdOf,
  runStream,
  type SchedulerProjection,
  slotBefore,
  type TaskKey,
  type TaskState,
  taskStream,
  toInstant,
  type WorkflowSpec,
} from "@chronolog/core";
import {
  type EventLog,
  type RecordedEvent,
  type StreamWrite,
  type Subscription,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import { renderOperator, renderTemplate } from "@chronolog/render";
import type { RunCommand } from "@chronolog/worker";
import type { Dispatcher } from "./dispatcher.js";
import { type Membership, shardKeyOf, shardOf } from "./membership.js";
import { type Alongside, foldInstance, ReportApplier } from "./reports.js";
import { TimerQueue } from "./timer-queue.js";

export interface SchedulerLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface SchedulerOptions {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly dispatcher: Dispatcher;
  readonly logger: SchedulerLogger;
  readonly now?: () => number;
  readonly random?: () => number;
  readonly newToken?: () => string;
  /** Called after each event is applied (checkpointing, progress). */
  readonly onApplied?: (event: RecordedEvent) => void;
  /** Called once intents are durable, just before their attempts go to workers (fault tests). */
  readonly beforeDispatch?: (commands: readonly RunCommand[]) => void;
  /** Called with the tokens of attempts just handed to workers. */
  readonly onDispatched?: (tokens: readonly string[]) => void;
  /** With several schedulers: which shards of the tasks this one decides for (default: all). */
  readonly membership?: Membership;
}

interface DispatchCandidate {
  readonly task: TaskState;
  /** The instance in memory, when this is a retry. */
  readonly instance: InstanceState | undefined;
}

const PENDING = -2n;
/** At most this many children start in the append of their parent's success (see alongside). */
const MAX_ALONGSIDE = 32;

/** A run's free slots for the children of a task that has just succeeded (see Scheduler.alongside). */
interface RunRoom {
  readonly runId: string;
  going: number;
  readonly limit: number;
}

/**
 * The scheduler: event-driven due selection, then gate -> connection queue -> payload render ->
 * durable DispatchIntended (batched) -> dispatch. Its state is the projection, fed only by its
 * subscription to the log; every write is a compare-and-set on the stream it decides for.
 */
export class Scheduler {
  /** Shard of each workflow and of each task without one (a pure function of the name). */
  private readonly workflowShards = new Map<string, number>();
  private readonly taskShards = new Map<string, number>();
  private readonly log: EventLog;
  private readonly projection: SchedulerProjection;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly newToken: () => string;
  private readonly timers: TimerQueue;
  private readonly reports: ReportApplier;
  private subscription: Subscription | null = null;
  private unsubscribeMembership: (() => void) | null = null;
  private readonly dirty = new Set<string>();
  private passScheduled = false;
  private stopped = false;
  /** task id -> position its last write must reach before it is evaluated again (PENDING: not yet known). */
  private readonly inflight = new Map<string, bigint>();
  /** connection -> instance streams holding a slot (queued or running). */
  private readonly load = new Map<string, Set<string>>();
  /** connection -> dispatches written or being written but not yet seen in the projection. */
  private readonly reserved = new Map<string, Set<string>>();
  /** connection -> the last slot take this scheduler wrote, and the take being written. */
  private readonly slotRevisions = new Map<string, bigint>();
  private readonly slotChains = new Map<string, Promise<unknown>>();
  /** connection -> tasks waiting for a slot. */
  private readonly waiting = new Map<string, Set<string>>();
  /** Runs changed since the last pass, and runs with a decision being written. */
  private readonly runsDirty = new Set<string>();
  private readonly runsInFlight = new Set<string>();
  /**
   * runId -> tasks admitted to the run whose intent the projection does not show yet: they hold
   * a slot of `maxActiveTasks` meanwhile, so that passes that overlap do not admit more.
   */
  private readonly runReserved = new Map<string, Set<string>>();
  /** task -> since when (a counter) it has waited for a slot in its run, for which interval. */
  private readonly waitingForSlot = new Map<string, { logicalDate: string; since: number }>();
  private slotWaits = 0;
  /** runId -> workflow, while this scheduler writes the run's RunStarted. */
  private readonly startingRuns = new Map<string, string>();
  /** Why each task is not running, in memory only (blocked is not a transition). */
  readonly blocked = new Map<string, string[]>();
  /** Stops hearing the dispatcher's reports (see stop). */
  private readonly stopListening: (() => void) | undefined;
  /** Counters for benchmarks and `chronolog up`'s status line. */
  readonly stats = { dispatched: 0, completed: 0, failed: 0, passes: 0, conflicts: 0 };

  constructor(private readonly o: SchedulerOptions) {
    this.log = o.log;
    this.projection = o.projection;
    this.now = o.now ?? Date.now;
    this.random = o.random ?? Math.random;
    this.newToken = o.newToken ?? randomUUID;
    this.timers = new TimerQueue((keys) => {
      for (const k of keys) this.dirty.add(k);
      this.schedulePass();
    }, this.now);
    this.reports = new ReportApplier({
      log: o.log,
      projection: o.projection,
      now: this.now,
      random: this.random,
      onError: (error, stream) => o.logger.error({ err: error, stream }, "could not apply a worker report"),
      alongside: (task, completed) => this.alongside(task, completed),
      onApplied: (report, outcome) => {
        if (outcome === "started_durable") o.dispatcher.proceed(report.token);
        else if (outcome === "rejected" && (report.kind === "started" || report.kind === "heartbeat")) {
          o.dispatcher.cancel(report.token, "the attempt is no longer current");
        }
      },
    });
    this.stopListening = o.dispatcher.onReport((report) => {
      if (report.kind === "started" || report.kind === "succeeded" || report.kind === "failed") {
        this.reports.submit(report);
      }
    });
  }

  /** Follows the log from the projection's position; every task is evaluated once at start. */
  async start(): Promise<void> {
    this.unsubscribeMembership = this.o.membership?.onChange(() => this.ownershipChanged()) ?? null;
    for (const inst of this.projection.instances.values()) this.trackLoad(inst);
    for (const id of this.projection.tasks.keys()) this.dirty.add(id);
    for (const [id, r] of this.projection.runs) if (r.status === "running") this.runsDirty.add(id);
    this.subscription = this.log.subscribe((e) => this.onEvent(e), {
      fromPosition: this.projection.position + 1n,
    });
    await this.subscription.caughtUp;
    this.schedulePass();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribeMembership?.();
    // A dispatcher outlives its scheduler (one pool serves the next one): stop hearing its reports.
    this.stopListening?.();
    this.timers.stop();
    await this.reports.idle();
    await this.subscription?.close();
  }

  /** Resolves when the subscription fails (it never ends otherwise until stop). */
  get done(): Promise<void> {
    return this.subscription?.done ?? Promise.resolve();
  }

  private onEvent(e: RecordedEvent): void {
    // A run failed fast, decided by whichever scheduler holds it: stop the attempt if it is ours.
    if (e.type === "AttemptCancelled") this.o.dispatcher.cancel(e.data.token, e.data.reason);
    const before = e.streamId.startsWith("instance-") ? this.projection.instances.get(e.streamId) : undefined;
    const touched = this.projection.apply(e);
    this.o.onApplied?.(e);
    if (touched.instance) {
      this.reports.observed(touched.instance, e.revision);
      const after = this.projection.instances.get(touched.instance);
      this.updateLoad(before, after, touched.instance);
      // The run now counts the attempt itself: the slot held for it until now is released.
      if (e.type === "DispatchIntended" && after?.runId && this.runReserved.size > 0)
        this.releaseRunSlotOf(after.runId, formatTaskKey(after.key), false);
    }
    if (touched.run) this.schedulePass();
    if (touched.task) {
      this.markDirty(touched.task);
      if (
        e.type === "IntervalCompleted" ||
        e.type === "IntervalFailed" ||
        e.type === "IntervalReset" ||
        e.type === "TaskDeclared"
      ) {
        if (e.type === "IntervalCompleted") this.stats.completed += 1;
        for (const child of this.projection.children.get(touched.task) ?? []) this.markDirty(child);
      }
    }
    if (touched.connection) this.wakeConnection(touched.connection);
    if (touched.run) {
      this.runsDirty.add(touched.run);
      if (e.type === "RunStarted") this.startingRuns.delete(touched.run);
      if (e.type === "RunFinished") this.forgetSlotWaits(touched.run);
    }
  }

  /** Whether this scheduler decides for the task (always, without a membership). */
  owns(task: { readonly id: string; readonly spec: { readonly workflow?: string } }): boolean {
    const m = this.o.membership;
    if (!m) return true;
    const workflow = task.spec.workflow;
    const cache = workflow ? this.workflowShards : this.taskShards;
    const name = workflow ?? task.id;
    let shard = cache.get(name);
    if (shard === undefined) {
      shard = shardOf(shardKeyOf(task), m.shards);
      cache.set(name, shard);
    }
    return m.holds(shard);
  }

  /** Shards moved: every task and running run is looked at again (only owned ones act). */
  private ownershipChanged(): void {
    if (this.stopped) return;
    for (const id of this.projection.tasks.keys()) this.dirty.add(id);
    for (const [id, r] of this.projection.runs) if (r.status === "running") this.runsDirty.add(id);
    this.schedulePass();
  }

  /** Re-evaluates a run on the next pass (reconcile check (c)). */
  wakeRun(runId: string): void {
    this.runsDirty.add(runId);
    this.schedulePass();
  }

  /** Whether a worker's report for the instance waits to be written by this scheduler. */
  hasPendingReport(stream: string): boolean {
    return this.reports.hasPending(stream);
  }

  /** Re-evaluates a task on the next pass. */
  wake(id: string): void {
    this.markDirty(id);
  }

  /** Records an attempt as lost, exactly as a worker supervisor's report would. */
  reportLost(inst: InstanceState, reason: string): void {
    const a = inst.attempts.at(-1);
    if (!a) return;
    this.reports.submit({
      kind: "failed",
      token: a.token,
      attempt: a.attempt,
      instanceStream: inst.stream,
      workerId: a.workerId ?? "unknown",
      at: new Date(this.now()).toISOString(),
      durationMs: 0,
      exitCode: null,
      error: { kind: "lost", message: reason },
      stdoutTail: "",
      stderrTail: "",
    });
  }

  private markDirty(id: string): void {
    this.dirty.add(id);
    this.schedulePass();
  }

  private schedulePass(): void {
    if (this.passScheduled || this.stopped) return;
    this.passScheduled = true;
    setImmediate(() => {
      this.passScheduled = false;
      this.pass().catch((error) => this.o.logger.error({ err: error }, "scheduler pass failed"));
    });
  }

  // ---- the pass ---------------------------------------------------------------------------

  private async pass(): Promise<void> {
    if (this.stopped) return;
    if (this.runsDirty.size > 0) {
      const runs = [...this.runsDirty];
      this.runsDirty.clear();
      await Promise.all(runs.map((r) => this.evaluateRun(r)));
    }
    if (this.dirty.size === 0) return;
    this.stats.passes += 1;
    const ids = [...this.dirty];
    this.dirty.clear();
    const now = this.now();
    const writes: Array<Promise<void>> = [];
    const candidates: DispatchCandidate[] = [];
    for (const id of ids) {
      const task = this.projection.tasks.get(id);
      if (!task) continue;
      const until = this.inflight.get(id);
      if (until !== undefined) {
        if (until === PENDING || until > this.projection.position) continue;
        this.inflight.delete(id);
      }
      this.evaluate(task, now, writes, candidates);
    }
    if (candidates.length > 0) writes.push(this.dispatchAll(candidates));
    await Promise.all(writes);
  }

  private evaluate(
    task: TaskState,
    now: number,
    writes: Array<Promise<void>>,
    out: DispatchCandidate[],
  ): void {
    const id = task.id;
    this.blocked.delete(id);
    if (task.status === "retired" || !this.owns(task)) return;
    const inst = this.projection.currentInstance(task);
    if (inst) {
      switch (inst.status) {
        case "success":
          writes.push(this.writeTask(task, [decideIntervalCompleted(task, inst.attempts.at(-1)?.attempt)]));
          return;
        case "skipped":
          writes.push(this.writeTask(task, [decideIntervalCompleted(task)]));
          return;
        case "retry_wait": {
          const at = inst.retryAt ? Date.parse(inst.retryAt) : now;
          if (at > now) {
            this.timers.wakeAt(id, at);
            this.blocked.set(id, [`retry due ${inst.retryAt}`]);
          } else if (task.status === "active") out.push({ task, instance: inst });
          return;
        }
        case "queued":
        case "running":
          return;
        default:
          if (!task.failure || task.failure.logicalDate !== task.logicalDate) {
            writes.push(this.writeTask(task, [decideIntervalFailed(task, inst)]));
          }
          return;
      }
    }
    if (task.failure && task.failure.logicalDate === task.logicalDate) return;
    if (task.status === "paused") return;
    const due = Date.parse(task.nextRunDate);
    if (due > now) {
      this.timers.wakeAt(id, due);
      return;
    }
    if (pastEndDate(task)) return;
    if (!task.spec.catchup && !task.backfill) {
      const jump = this.catchupJump(task, now);
      if (jump) {
        writes.push(this.writeTask(task, [jump]));
        return;
      }
    }
    const gate = gateFor(this.projection, task);
    if (!gate.open) {
      this.blocked.set(id, gate.reasons.map(describeGateReason));
      return;
    }
    out.push({ task, instance: undefined });
  }

  /** With catch-up off, a task more than one interval behind jumps to the latest due interval. */
  private catchupJump(task: TaskState, now: number): DomainEvent | null {
    const latest = lastSlotEndingBy(task.spec.cron, task.spec.timezone, new Date(now));
    if (latest.getTime() <= Date.parse(task.logicalDate)) return null;
    return {
      type: "IntervalReset",
      data: {
        key: task.key,
        logicalDate: toInstant(latest),
        nextRunDate: toInstant(nextCronTime(task.spec.cron, task.spec.timezone, latest)),
        prevIntervalStart:
          task.prevIntervalStart ?? toInstant(slotBefore(task.spec.cron, task.spec.timezone, latest)),
        reason: "catchup_disabled",
      },
    };
  }

  /** A compare-and-set append on the task stream; a conflict just means: evaluate again. */
  private async writeTask(task: TaskState, events: DomainEvent[]): Promise<void> {
    this.inflight.set(task.id, PENDING);
    try {
      const r = await this.log.append(taskStream(task.key), events, { expectedRevision: task.revision });
      this.inflight.set(task.id, r.position);
      if (events.some((e) => e.type === "IntervalFailed")) this.stats.failed += 1;
    } catch (error) {
      this.inflight.delete(task.id);
      if (error instanceof WrongExpectedRevisionError) {
        this.stats.conflicts += 1;
        this.markDirty(task.id);
        return;
      }
      this.o.logger.error({ err: error, task: task.id }, "could not write to the task stream");
      this.timers.wakeAt(task.id, this.now() + 1000); // try again
    }
  }

  // ---- connection queue, render, intent, dispatch ----------------------------------------------

  private async dispatchAll(all: DispatchCandidate[]): Promise<void> {
    const candidates = await this.admitToRuns(all);
    const byConnection = new Map<string, DispatchCandidate[]>();
    for (const c of candidates) {
      const conn = c.task.spec.connection ?? "";
      let list = byConnection.get(conn);
      if (!list) {
        list = [];
        byConnection.set(conn, list);
      }
      list.push(c);
    }
    const released: DispatchCandidate[] = [];
    /** The connection stream's revision the slots were counted at: the takes' compare-and-set. */
    const countedAt = new Map<string, bigint>();
    for (const [conn, list] of byConnection) {
      if (conn === "") {
        released.push(...list);
        continue;
      }
      const spec = this.projection.connections.get(conn);
      if (!spec) {
        for (const c of list) {
          this.blocked.set(c.task.id, [`connection ${conn} is not declared`]);
          // Its declaration (perhaps later in the same file) wakes the task.
          this.waitOn(conn, c.task.id);
        }
        continue;
      }
      const used = (this.load.get(conn)?.size ?? 0) + (this.reserved.get(conn)?.size ?? 0);
      const revision = this.projection.connectionRevisions.get(conn);
      if (revision !== undefined) countedAt.set(conn, revision);
      const available = Math.max(0, spec.maxParallelism - used);
      list.sort(
        (a, b) => a.task.logicalDate.localeCompare(b.task.logicalDate) || a.task.id.localeCompare(b.task.id),
      );
      released.push(...list.slice(0, available));
      for (const c of list.slice(available)) {
        this.blocked.set(c.task.id, [
          `waiting for a slot on connection ${conn} (${used} of ${spec.maxParallelism} in use)`,
        ]);
        this.waitOn(conn, c.task.id);
      }
      const reserved = setIn(this.reserved, conn);
      for (const c of list.slice(0, available)) reserved.add(instanceStream(c.task.key, c.task.logicalDate));
    }
    // Candidates held back by their connection give back the run slot they were admitted to.
    const going = new Set(released);
    for (const c of candidates) if (!going.has(c)) this.releaseRunSlot(c, false);
    const commands = await Promise.all(
      released.map((c) => this.writeIntent(c, countedAt.get(c.task.spec.connection ?? ""))),
    );
    // An intent not written (or a cache hit, done at once) gives its run slot back now; one
    // written gives it back when the projection shows it, as queued.
    commands.forEach((cmd, i) => {
      const c = released[i];
      if (cmd === null && c) this.releaseRunSlot(c, true);
    });
    this.send(commands.filter((c): c is RunCommand => c !== null));
  }

  /** Hands attempts whose intents are durable to the workers. */
  private send(ready: readonly RunCommand[]): void {
    if (ready.length === 0) return;
    this.stats.dispatched += ready.length;
    // Every intent in `ready` is durable: only now do the workers hear of them.
    this.o.beforeDispatch?.(ready);
    this.o.dispatcher.dispatch(ready);
    this.o.onDispatched?.(ready.map((c) => c.token));
  }

  // ---- children started with their parent's success ---------------------------------------------

  /**
   * The intents of the children that `task`'s success lets start, to be written in the same
   * atomic append as that success (see ReportApplier): a child's attempt is then one commit
   * away from its parent's end, not two. The append is made only if the log has not moved past
   * this projection's position (so the children are decided on everything before them, as the
   * pass would decide them). Only the plain case is decided here, on the projection as it will
   * be once the success is applied: a child that is due, not being backfilled, has no
   * connection to take a slot on and no attempt stream yet, whose gate that success opens, and
   * which is either a task of no workflow or a task of the parent's own run that the run has a
   * free slot for (and no task of the run waits for one). Every other child is left to the pass,
   * which the success wakes as before.
   */
  private async alongside(
    task: TaskState,
    completed: DomainEventOf<"IntervalCompleted">,
  ): Promise<Alongside | null> {
    if (!this.projection.children.get(task.id)?.size || !this.log.supportsExpectedHead) return null;
    // Decided on everything committed so far: this process's latest commits may not have
    // reached the projection yet (its subscription hears of them a moment later).
    const head = await this.log.headPosition();
    for (let turns = 0; this.projection.position < head && turns < 3; turns++)
      await new Promise((resolve) => setImmediate(resolve));
    const children = this.projection.children.get(task.id);
    if (this.stopped || !children || this.projection.position < head) return null;
    const after = evolveTask(task, completed, { revision: task.revision + 1n, position: -1n });
    if (!after) return null;
    const ahead = new Map([[task.id, after]]);
    const now = this.now();
    const wf = task.spec.workflow;
    const logicalDate = completed.data.logicalDate;
    let room: RunRoom | null | undefined;
    const planned: Array<{ child: TaskState; runId?: string; write: StreamWrite; command: RunCommand }> = [];
    for (const id of children) {
      // A wide fan-out is the pass's: an append stays small, and so does the time to decide it.
      if (planned.length === MAX_ALONGSIDE) break;
      const child = this.projection.tasks.get(id);
      if (!child || !this.startsAlongside(child, now, ahead)) continue;
      if (child.spec.workflow !== undefined) {
        if (child.spec.workflow !== wf || child.logicalDate !== logicalDate) continue;
        if (room === undefined) room = this.runRoom(task, child.spec.workflow, logicalDate);
        if (!room || room.going >= room.limit) continue;
      }
      let operator: OperatorSpec;
      let cacheKey: string | undefined;
      try {
        operator = this.render(child);
        cacheKey = this.renderCacheKey(child);
      } catch {
        continue; // the pass holds the task and says why
      }
      if (cacheKey !== undefined && this.projection.hasCacheKey(child.id, cacheKey)) continue;
      const token = this.newToken();
      const runId = child.spec.workflow !== undefined && room ? room.runId : undefined;
      if (runId !== undefined && room) room.going += 1;
      planned.push({
        child,
        ...(runId !== undefined ? { runId } : {}),
        write: {
          streamId: instanceStream(child.key, child.logicalDate),
          events: [intentEvent(child, 1, token, operator, cacheKey)],
          expectedRevision: "no_stream",
        },
        command: runCommand(child, 1, token, operator),
      });
    }
    if (planned.length === 0) return null;
    for (const { child, runId } of planned) {
      this.inflight.set(child.id, PENDING);
      if (runId !== undefined) this.reserveRunSlot(runId, child.id);
      this.blocked.delete(child.id);
    }
    return {
      writes: planned.map((p) => p.write),
      expectedHead: this.projection.position,
      settle: (results) => {
        if (!results) {
          for (const { child, runId } of planned) {
            this.inflight.delete(child.id);
            if (runId !== undefined) this.releaseRunSlotOf(runId, child.id, true);
            this.markDirty(child.id);
          }
          return;
        }
        planned.forEach(({ child }, i) => {
          const r = results[i];
          if (r) this.inflight.set(child.id, r.position);
        });
        try {
          this.send(planned.map((p) => p.command));
        } catch (error) {
          this.o.logger.error({ err: error }, "could not hand attempts to the workers");
        }
      },
    };
  }

  /**
   * The room `task`'s run has for its children once `task` has succeeded, or null when they are
   * left to the pass: the run is not going, failed fast, or has a task waiting for a slot (the
   * pass gives a free slot to the task that waited longest).
   */
  private runRoom(task: TaskState, workflow: string, logicalDate: string): RunRoom | null {
    const runId = runIdOf(workflow, logicalDate);
    const run = this.projection.runs.get(runId);
    const spec = this.projection.workflows.get(workflow);
    if (run?.status !== "running" || !spec || failedFast(spec, run)) return null;
    for (const [t, w] of this.waitingForSlot)
      if (w.logicalDate === logicalDate && this.projection.tasks.get(t)?.spec.workflow === workflow)
        return null;
    // The parent's own slot is free once its success is written.
    return { runId, going: this.runSlotsTaken(runId, run, task.id), limit: spec.maxActiveTasks };
  }

  /** Whether `child` starts with its parent's success (see alongside). */
  private startsAlongside(child: TaskState, now: number, ahead: ReadonlyMap<string, TaskState>): boolean {
    return (
      child.status === "active" &&
      !child.spec.connection &&
      this.owns(child) &&
      !this.inflight.has(child.id) &&
      !this.projection.instances.has(instanceStream(child.key, child.logicalDate)) &&
      !(child.failure && child.failure.logicalDate === child.logicalDate) &&
      Date.parse(child.nextRunDate) <= now &&
      !pastEndDate(child) &&
      // (A backfill goes back over intervals that may have run before: the pass reads those.)
      child.backfill === null &&
      (child.spec.catchup || this.catchupJump(child, now) === null) &&
      gateFor(this.projection, child, ahead).open
    );
  }

  // ---- runs -------------------------------------------------------------------------------------

  /**
   * Tasks of a workflow run together per logical date. A task may start its run if the
   * workflow has fewer than `maxActiveRuns` runs going, and join it while the run has fewer
   * than `maxActiveTasks` attempts queued or running. RunStarted is written (durably) before
   * any of the run's intents.
   */
  private async admitToRuns(candidates: DispatchCandidate[]): Promise<DispatchCandidate[]> {
    const admitted: DispatchCandidate[] = [];
    const toStart = new Map<
      string,
      {
        workflow: string;
        logicalDate: string;
        trigger: "schedule" | "backfill";
        revision: bigint | "no_stream";
        /** The candidates that reopen a finished run (a backfill): only they restart in it. */
        reopening: TaskKey[];
      }
    >();
    const activeRuns = new Map<string, number>();
    for (const r of this.projection.runs.values()) {
      if (r.status === "running") activeRuns.set(r.workflow, (activeRuns.get(r.workflow) ?? 0) + 1);
    }
    // Runs whose RunStarted is being written by an earlier pass count as running too.
    for (const [id, wf] of this.startingRuns) {
      if (this.projection.runs.get(id)?.status !== "running")
        activeRuns.set(wf, (activeRuns.get(wf) ?? 0) + 1);
    }
    const taskSlots = new Map<string, number>();
    // A run's free slots go to its tasks in the order they became ready (oldest interval first):
    // a task that waited for a slot goes before one that has just become ready.
    const waitingSince = (c: DispatchCandidate): number => {
      const w = this.waitingForSlot.get(c.task.id);
      return w && w.logicalDate === c.task.logicalDate ? w.since : Number.POSITIVE_INFINITY;
    };
    const byDate = (a: DispatchCandidate, b: DispatchCandidate): number =>
      a.task.logicalDate < b.task.logicalDate ? -1 : a.task.logicalDate > b.task.logicalDate ? 1 : 0;
    const ordered =
      this.waitingForSlot.size === 0
        ? candidates
        : candidates
            .map((c, i) => ({ c, i, since: waitingSince(c) }))
            .sort((a, b) => byDate(a.c, b.c) || a.since - b.since || a.i - b.i)
            .map((x) => x.c);
    for (const c of ordered) {
      const wf = c.task.spec.workflow;
      if (!wf) {
        admitted.push(c);
        continue;
      }
      const spec = this.projection.workflows.get(wf);
      const runId = runIdOf(wf, c.task.logicalDate);
      const run = this.projection.runs.get(runId);
      if (run?.status !== "running") {
        const pending = toStart.has(runId);
        const active = activeRuns.get(wf) ?? 0;
        if (!pending && spec && active >= spec.maxActiveRuns) {
          this.blocked.set(c.task.id, [
            `workflow ${wf} has ${active} runs going (maxActiveRuns ${spec.maxActiveRuns})`,
          ]);
          this.waitOn(`run:${wf}`, c.task.id);
          continue;
        }
        if (!pending) {
          toStart.set(runId, {
            workflow: wf,
            logicalDate: c.task.logicalDate,
            trigger: run ? "backfill" : "schedule",
            revision: run ? run.revision : "no_stream",
            reopening: [],
          });
          activeRuns.set(wf, active + 1);
        }
        toStart.get(runId)?.reopening.push(c.task.key);
      }
      if (failedFast(spec, run)) {
        this.blocked.set(c.task.id, [`run ${runId} failed fast: nothing new starts`]);
        continue;
      }
      const running = taskSlots.get(runId) ?? this.runSlotsTaken(runId, run);
      const limit = spec?.maxActiveTasks ?? Number.POSITIVE_INFINITY;
      if (running >= limit) {
        this.blocked.set(c.task.id, [`run ${runId} has ${running} tasks going (maxActiveTasks ${limit})`]);
        this.waitOn(`run:${runId}`, c.task.id);
        if (waitingSince(c) === Number.POSITIVE_INFINITY)
          this.waitingForSlot.set(c.task.id, { logicalDate: c.task.logicalDate, since: ++this.slotWaits });
        continue;
      }
      this.waitingForSlot.delete(c.task.id);
      taskSlots.set(runId, running + 1);
      this.reserveRunSlot(runId, c.task.id);
      admitted.push(c);
    }
    if (toStart.size === 0) return admitted;
    const started = new Set<string>();
    await Promise.all(
      [...toStart].map(async ([runId, r]) => {
        // A new run has every task of the workflow; a reopened one only the tasks starting
        // again in it (its other tasks keep their outcomes, so it can finish).
        const tasks =
          r.revision === "no_stream"
            ? [...this.projection.tasks.values()]
                .filter((t) => t.spec.workflow === r.workflow && t.status !== "retired")
                .map((t) => t.key)
            : r.reopening;
        this.startingRuns.set(runId, r.workflow);
        try {
          await this.log.append(
            runStream(runId),
            [
              {
                type: "RunStarted",
                data: {
                  runId,
                  workflow: r.workflow,
                  logicalDate: r.logicalDate,
                  tasks,
                  trigger: r.trigger,
                  params: {},
                },
              },
            ],
            { expectedRevision: r.revision },
          );
          started.add(runId);
          // (It stops counting as "starting" once the projection shows the run: see onEvent.)
        } catch (error) {
          this.startingRuns.delete(runId);
          // Another writer started it first: the run exists, which is all that is needed.
          if (error instanceof WrongExpectedRevisionError) started.add(runId);
          else this.o.logger.error({ err: error, run: runId }, "could not start the run");
        }
      }),
    );
    return admitted.filter((c) => {
      if (!c.task.spec.workflow) return true;
      const runId = runIdOf(c.task.spec.workflow, c.task.logicalDate);
      if (started.has(runId) || this.projection.runs.get(runId)?.status === "running") return true;
      this.releaseRunSlot(c, true);
      return false;
    });
  }

  /**
   * The run's slots of `maxActiveTasks` in use: its attempts queued or running (but `except`'s)
   * and the slots held for tasks admitted to it whose intents the projection does not show yet.
   */
  private runSlotsTaken(runId: string, run: RunState | undefined, except?: string): number {
    const outcomes = run?.status === "running" ? Object.entries(run.outcomes) : [];
    const going = outcomes.filter(([t, o]) => t !== except && (o === "queued" || o === "running"));
    return going.length + (this.runReserved.get(runId)?.size ?? 0);
  }

  /** A finished run's tasks no longer wait for its slots (a rerun queues them afresh). */
  private forgetSlotWaits(runId: string): void {
    const run = this.projection.runs.get(runId);
    if (!run || this.waitingForSlot.size === 0) return;
    for (const t of run.tasks) {
      if (this.waitingForSlot.get(t)?.logicalDate === run.logicalDate) this.waitingForSlot.delete(t);
    }
  }

  private reserveRunSlot(runId: string, taskId: string): void {
    setIn(this.runReserved, runId).add(taskId);
  }

  /** Frees the slot a candidate held in its run until its intent showed (or did not come). */
  private releaseRunSlot(c: DispatchCandidate, wake: boolean): void {
    const wf = c.task.spec.workflow;
    if (!wf) return;
    this.releaseRunSlotOf(runIdOf(wf, c.task.logicalDate), c.task.id, wake);
  }

  private releaseRunSlotOf(runId: string, taskId: string, wake: boolean): void {
    const set = this.runReserved.get(runId);
    if (!set?.delete(taskId)) return;
    if (set.size === 0) this.runReserved.delete(runId);
    if (wake) this.wakeConnection(`run:${runId}`);
  }

  /** A run changed: apply its failure policy, finish it when every task is terminal. */
  private async evaluateRun(runId: string): Promise<void> {
    const run = this.projection.runs.get(runId);
    if (!run) return;
    this.wakeConnection(`run:${runId}`);
    this.wakeConnection(`run:${run.workflow}`);
    if (
      run.status !== "running" ||
      this.runsInFlight.has(runId) ||
      !this.owns({ id: run.runId, spec: { workflow: run.workflow } })
    )
      return;
    const decision = decideRun(
      run,
      this.projection.workflows.get(run.workflow),
      (t) => this.projection.tasks.get(t)?.key ?? (parseTaskKey(t) as { key: TaskKey }).key,
      (t) => (this.projection.tasks.get(t)?.spec.parents ?? []).map(formatTaskKey),
    );
    if (decision.close.length === 0 && decision.cancel.length === 0 && !decision.finish) return;
    this.runsInFlight.add(runId);
    try {
      const writes: Array<Promise<unknown>> = [];
      for (const { task, event } of decision.close) {
        const key = this.projection.tasks.get(task)?.key;
        if (!key) continue;
        const stream = instanceStream(key, run.logicalDate);
        const inst = this.projection.instances.get(stream);
        // An earlier run of this date may have left the stream, no longer held in memory.
        const revision = inst ? inst.revision : await this.log.streamRevision(stream);
        writes.push(this.appendQuietly(stream, [event], revision));
      }
      for (const task of decision.cancel) {
        const key = this.projection.tasks.get(task)?.key;
        if (!key) continue;
        const stream = instanceStream(key, run.logicalDate);
        const inst = this.projection.instances.get(stream);
        const a = inst?.attempts.at(-1);
        if (!inst || !a) continue;
        this.o.dispatcher.cancel(a.token, `run ${runId} failed fast`);
        writes.push(
          this.appendQuietly(
            stream,
            [
              {
                type: "AttemptCancelled",
                data: { attempt: a.attempt, token: a.token, reason: `run ${runId} failed fast` },
              },
            ],
            inst.revision,
          ),
        );
      }
      if (decision.finish) writes.push(this.appendQuietly(runStream(runId), [decision.finish], run.revision));
      await Promise.all(writes);
    } finally {
      this.runsInFlight.delete(runId);
    }
  }

  /** A compare-and-set append whose conflict only means someone decided first. */
  private async appendQuietly(
    stream: string,
    events: DomainEvent[],
    expected: bigint | "no_stream",
  ): Promise<void> {
    try {
      await this.log.append(stream, events, { expectedRevision: expected });
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) this.stats.conflicts += 1;
      else this.o.logger.error({ err: error, stream }, "could not write a run decision");
    }
  }

  /** Writes DispatchIntended (durably) and returns the command to send, or null. */
  private async writeIntent(c: DispatchCandidate, countedAt?: bigint): Promise<RunCommand | null> {
    const { task } = c;
    const stream = instanceStream(task.key, task.logicalDate);
    const conn = task.spec.connection;
    this.inflight.set(task.id, PENDING);
    let keepReservation = false;
    let waitsForSlot = false;
    try {
      let operator: OperatorSpec;
      let cacheKey: string | undefined;
      try {
        operator = this.render(task);
        cacheKey = this.renderCacheKey(task);
      } catch (error) {
        this.blocked.set(task.id, [(error as Error).message]);
        this.o.logger.error({ task: task.id, err: error }, "payload render failed; the task is held");
        this.inflight.delete(task.id);
        return null;
      }
      // Most intervals have no attempt stream yet: assume so, and let compare-and-set say otherwise.
      let inst = c.instance ?? this.projection.instances.get(stream);
      if (!c.instance && inst && !isTerminal(inst)) {
        // An attempt of this interval is still in flight (from before a backfill moved the task
        // away and back): never start a second one beside it.
        this.blocked.set(task.id, [
          `attempt ${inst.attempts.at(-1)?.attempt} of ${task.logicalDate} is still in flight`,
        ]);
        this.inflight.delete(task.id);
        return null;
      }
      let streamRevision: bigint | "no_stream" = "no_stream";
      for (let tries = 0; ; tries++) {
        const attempt = (inst?.attempts.at(-1)?.attempt ?? 0) + 1;
        const token = this.newToken();
        const intent = intentEvent(task, attempt, token, operator, cacheKey);
        // An earlier success with the same cache key: record a cache hit instead of running.
        const hit = cacheKey !== undefined && this.projection.hasCacheKey(task.id, cacheKey);
        const events: DomainEvent[] = hit
          ? [
              intent,
              {
                type: "AttemptSucceeded",
                data: { attempt, token, durationMs: 0, exitCode: null, cacheHit: true, cacheKey },
              },
            ]
          : [intent];
        try {
          const expectedRevision = inst ? inst.revision : streamRevision;
          const r =
            conn && !hit
              ? await this.appendTakingSlot(conn, countedAt, stream, events, expectedRevision, {
                  stream,
                  attempt,
                  token,
                })
              : await this.log.append(stream, events, { expectedRevision });
          this.inflight.set(task.id, r.position);
          // The reservation becomes load when the projection applies the intent (and is freed
          // again with the cache hit that comes with it): released once, there.
          keepReservation = true;
          if (hit) return null;
          return runCommand(task, attempt, token, operator);
        } catch (error) {
          // The stream existed (an interval run before, now backfilled): read it and go on from it.
          if (
            error instanceof WrongExpectedRevisionError &&
            error.streamId === stream &&
            !inst &&
            tries === 0
          ) {
            const events = await this.log.readStream(stream);
            inst = foldInstance(events);
            if (inst && !isTerminal(inst)) throw error;
            // A finished attempt is an earlier run's only if the task was moved to this
            // interval (a backfill, a rerun) after it ended. Otherwise it is this interval's own
            // outcome, decided by another scheduler (or before a restart) and not yet seen here.
            const newer = await this.log.readStream(taskStream(task.key), {
              fromRevision: task.revision + 1n,
            });
            const ended = events.at(-1)?.position ?? -1n;
            if (newer.length > 0 || (inst && inst.dispatchedAt > task.movedAt)) {
              // Evaluate again once this scheduler has seen as far as the log it just read.
              this.inflight.set(task.id, newer.at(-1)?.position ?? ended);
              this.timers.wakeAt(task.id, this.now() + 1);
              return null;
            }
            // A stream holding only rejected reports folds to nothing: go on from its revision.
            streamRevision = events.at(-1)?.revision ?? "no_stream";
            continue;
          }
          throw error;
        }
      }
    } catch (error) {
      this.inflight.delete(task.id);
      if (error instanceof WrongExpectedRevisionError && conn && error.streamId === connectionStream(conn)) {
        // Another scheduler took slots of the connection since this one counted: count again
        // once its take is seen here.
        this.stats.conflicts += 1;
        this.slotRevisions.delete(conn);
        const seen = this.projection.connectionRevisions.get(conn) ?? -1n;
        if (error.actual !== "no_stream" && seen < error.actual) {
          this.waitOn(conn, task.id);
          waitsForSlot = true;
        } else this.markDirty(task.id);
      } else if (error instanceof WrongExpectedRevisionError) {
        this.stats.conflicts += 1;
        this.markDirty(task.id);
      } else {
        this.o.logger.error({ err: error, task: task.id }, "could not write the dispatch intent");
        this.timers.wakeAt(task.id, this.now() + 1000); // try again
      }
      return null;
    } finally {
      // (Not waking the connection's waiters when this task just joined them to wait for a take.)
      if (conn && !keepReservation) this.release(conn, stream, !waitsForSlot);
    }
  }

  /**
   * Writes an intent together with the slot it takes on its connection, in one atomic append
   * whose compare-and-set on the connection stream fails if any other scheduler took a slot
   * since this one counted (at revision `countedAt`). Takes on one connection are written one
   * after another: a take expects the revision its count saw or, if later, the one this
   * scheduler's previous take left (everything between was this scheduler's own, and counted
   * as reserved).
   */
  private appendTakingSlot(
    conn: string,
    countedAt: bigint | undefined,
    stream: string,
    events: DomainEvent[],
    expectedRevision: bigint | "no_stream",
    slot: { stream: string; attempt: number; token: string },
  ): Promise<{ position: bigint }> {
    const previous = this.slotChains.get(conn) ?? Promise.resolve();
    const write = previous
      .catch(() => {})
      .then(async () => {
        const own = this.slotRevisions.get(conn);
        const revision = own === undefined || (countedAt !== undefined && countedAt > own) ? countedAt : own;
        const [instance, connection] = await this.log.appendMany([
          { streamId: stream, events, expectedRevision },
          {
            streamId: connectionStream(conn),
            events: [{ type: "ConnectionSlotsTaken", data: { connection: conn, attempts: [slot] } }],
            expectedRevision: revision ?? "no_stream",
          },
        ]);
        if (connection) this.slotRevisions.set(conn, connection.nextExpectedRevision);
        return instance as { position: bigint };
      });
    this.slotChains.set(conn, write);
    void write
      .finally(() => {
        if (this.slotChains.get(conn) === write) this.slotChains.delete(conn);
      })
      .catch(() => {});
    return write;
  }

  /** The task is evaluated again when `key` (a connection, or `run:` a run or workflow) wakes. */
  private waitOn(key: string, taskId: string): void {
    setIn(this.waiting, key).add(taskId);
  }

  private renderCacheKey(task: TaskState): string | undefined {
    if (task.spec.cacheKey === undefined) return undefined;
    return renderTemplate(task.spec.cacheKey, this.renderContext(task), "cacheKey");
  }

  private renderContext(task: TaskState) {
    const interval = dataInterval(task.logicalDate, task.spec.cron, task.spec.timezone);
    return {
      task: task.key,
      logicalDate: task.logicalDate,
      dataIntervalStart: interval.start,
      dataIntervalEnd: interval.end,
      prevIntervalStart: task.prevIntervalStart,
      timezone: task.spec.timezone,
      config: task.spec.config,
      params: task.spec.workflow
        ? (this.projection.runs.get(runIdOf(task.spec.workflow, task.logicalDate))?.params ?? {})
        : {},
    };
  }

  private render(task: TaskState): OperatorSpec {
    // Most operators carry no template at all: no need to build the template context.
    if (task.spec.operator.type === "noop" || !hasTemplate(task.spec.operator)) return task.spec.operator;
    return renderOperator(task.spec.operator, this.renderContext(task));
  }

  // ---- connection load ------------------------------------------------------------------------

  private holdsSlot(inst: InstanceState | undefined): boolean {
    return !!inst && inst.connection !== null && (inst.status === "queued" || inst.status === "running");
  }

  private trackLoad(inst: InstanceState): void {
    if (!this.holdsSlot(inst) || inst.connection === null) return;
    setIn(this.load, inst.connection).add(inst.stream);
  }

  private updateLoad(
    before: InstanceState | undefined,
    after: InstanceState | undefined,
    stream: string,
  ): void {
    const had = this.holdsSlot(before);
    const has = this.holdsSlot(after);
    if (!had && has && after) {
      // The intent is now in the projection: its reservation becomes load.
      if (after.connection) this.release(after.connection, stream, false);
      this.trackLoad(after);
    } else if (had && !has && before?.connection) {
      this.load.get(before.connection)?.delete(stream);
      this.wakeConnection(before.connection);
    }
    if (after && isTerminal(after) && before?.connection) this.load.get(before.connection)?.delete(stream);
  }

  private release(conn: string, stream: string, wake = true): void {
    const reserved = this.reserved.get(conn);
    reserved?.delete(stream);
    if (reserved?.size === 0) this.reserved.delete(conn);
    if (wake) this.wakeConnection(conn);
  }

  private wakeConnection(conn: string): void {
    const w = this.waiting.get(conn);
    if (!w || w.size === 0) return;
    this.waiting.delete(conn);
    for (const id of w) this.markDirty(id);
  }
}

/** Whether a fail_fast run has had a failure: nothing new starts in it. */
function failedFast(spec: WorkflowSpec | undefined, run: RunState | undefined): boolean {
  return (
    spec?.failurePolicy === "fail_fast" &&
    run?.status === "running" &&
    Object.values(run.outcomes).some((o) => o === "failed" || o === "abandoned")
  );
}

/** Whether the task's current interval is past its schedule's end. */
function pastEndDate(task: TaskState): boolean {
  return !!task.spec.endDate && Date.parse(task.logicalDate) > Date.parse(task.spec.endDate);
}

/** The set `map` holds under `key`, made empty the first time. */
function setIn<K, V>(map: Map<K, Set<V>>, key: K): Set<V> {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  return set;
}

/** The intent to run `attempt` of the task's current interval. */
function intentEvent(
  task: TaskState,
  attempt: number,
  token: string,
  operator: OperatorSpec,
  cacheKey: string | undefined,
): DomainEvent {
  const conn = task.spec.connection;
  return {
    type: "DispatchIntended",
    data: {
      key: task.key,
      logicalDate: task.logicalDate,
      attempt,
      token,
      ...(conn ? { connection: conn } : {}),
      operator: operator as unknown as Record<string, unknown>,
      idempotent: task.spec.idempotent,
      leaseSeconds: task.spec.leaseSeconds,
      ...(task.spec.workflow ? { runId: runIdOf(task.spec.workflow, task.logicalDate) } : {}),
      ...(cacheKey !== undefined ? { cacheKey } : {}),
    },
  };
}

/** What a worker is sent once the intent is durable. */
function runCommand(task: TaskState, attempt: number, token: string, operator: OperatorSpec): RunCommand {
  return {
    kind: "run",
    instanceStream: instanceStream(task.key, task.logicalDate),
    taskKey: task.id,
    logicalDate: task.logicalDate,
    attempt,
    token,
    operator: operator as unknown as Record<string, unknown>,
    leaseSeconds: task.spec.leaseSeconds,
    // A task that is not idempotent runs only once its start is on record.
    ...(task.spec.idempotent ? {} : { awaitProceed: true }),
  };
}

function hasTemplate(value: unknown): boolean {
  if (typeof value === "string") return value.includes("{{") || value.includes("{%");
  if (Array.isArray(value)) return value.some(hasTemplate);
  if (value && typeof value === "object") return Object.values(value).some(hasTemplate);
  return false;
}
