import {
  type DomainEvent,
  decideStanding,
  formatTaskKey,
  type InstanceState,
  type SchedulerProjection,
  type TaskDecision,
  type TaskState,
  taskStream,
  unreachable,
} from "@chronolog/core";
import {
  type EventLog,
  type RecordedEvent,
  randomId,
  type StreamCheck,
  type StreamWrite,
  type Subscription,
} from "@chronolog/log";
import { Admissions, type Free } from "./admission/admissions.js";
import { ConnectionSlots } from "./admission/connection-slots.js";
import type { QueueRooms } from "./admission/pass-slots.js";
import { RunSlots } from "./admission/run-slots.js";
import { Agenda } from "./agenda.js";
import { alertWrites } from "./alerts.js";
import { AppendChain } from "./append-chain.js";
import { handleCommand } from "./command.js";
import { DeadlineWatch } from "./deadline-watch.js";
import type { Dispatcher } from "./dispatcher.js";
import { InFlight } from "./inflight.js";
import { IntentWriter } from "./intent-writer.js";
import type { Membership } from "./membership.js";
import { Outbox } from "./outbox.js";
import { Ownership } from "./ownership.js";
import { LeaseBook } from "./reconcile/lease-book.js";
import type { ReconciledScheduler } from "./reconcile/reconciler.js";
import { RunKeeper } from "./run-keeper.js";
import type { SchedulerLogger, SchedulerObserver } from "./scheduler-types.js";
import { standingChecks } from "./standing-checks.js";
import { SuccessCommits } from "./success-commit.js";

export type { SchedulerLogger, SchedulerObserver } from "./scheduler-types.js";

export interface SchedulerOptions {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly dispatcher: Dispatcher;
  readonly logger: SchedulerLogger;
  readonly now?: () => number;
  readonly random?: () => number;
  readonly newToken?: () => string;
  /** What the running process hears of the scheduler's work (checkpoints, progress, fault tests). */
  readonly observer?: SchedulerObserver;
  /** With several schedulers: which shards of the tasks this one decides for (default: all). */
  readonly membership?: Membership;
  /**
   * The remote workers' queues: a task of a queue is held while no worker serving it has a
   * free slot. Absent: tasks are not held for one (every attempt goes to the dispatcher).
   */
  readonly queues?: QueueRooms;
  /** The leases of running attempts, when others renew them too (remote workers). Default: a book of its own. */
  readonly leases?: LeaseBook;
}

/** How often a task whose schedule could not be computed is looked at again. */
const STUCK_RECHECK_MS = 60_000;
/**
 * Most tasks that share no limit one pass decides (see takeDirty). Smaller pieces keep less in
 * flight for the garbage collector to copy; 250 settled the realistic catalogue with 1.1x to
 * 1.25x less CPU a completion than 1,000 did, and 100 no better than 250.
 */
const PASS_TASKS = 250;

/**
 * The scheduler: follows the log into the projection and, on each pass over the tasks its
 * Agenda names (dirty, woken by a limit or a timer), acts on the core's `decideStanding` for
 * each: writes the event a decision carries, sets a timer, or hands the tasks free to start to
 * Admissions (limits in the order free slots are given out, intents, dispatch). The rooms it
 * wires together: ConnectionSlots and RunSlots (the limits), IntentWriter (render, intent, slot
 * take), SuccessCommits (a worker's reports; a success with the children it starts, in one
 * append), RunKeeper (runs), Ownership (shards) and the Outbox (the one way out to the workers).
 */
export class Scheduler implements ReconciledScheduler {
  private readonly log: EventLog;
  private readonly projection: SchedulerProjection;
  private readonly now: () => number;
  private readonly agenda: Agenda;
  private readonly admissions: Admissions;
  private readonly commits: SuccessCommits;
  private readonly connections: ConnectionSlots;
  private readonly runSlots: RunSlots;
  private readonly intents: IntentWriter;
  private readonly runs: RunKeeper;
  private readonly ownership: Ownership;
  private readonly outbox: Outbox;
  /** Deadlines: one timer a task that declares one, off the pass. */
  readonly deadlines: DeadlineWatch;
  readonly inflight = new InFlight();
  /** Leases of running attempts, renewed by their workers' reports (the reconcile loop reads them). */
  readonly leases: LeaseBook;
  private subscription: Subscription | null = null;
  private unsubscribeMembership: (() => void) | null = null;
  /** Tasks whose schedule could not be computed, with the cause last logged for each. */
  private readonly stuck = new Map<string, string>();
  /** Runs changed since the last pass. */
  private readonly runsDirty = new Set<string>();
  private passScheduled = false;
  private stopped = false;
  /** The membership's fence, as this scheduler last acted on it (see ownershipChanged). */
  private fenced = false;
  /** Stops hearing of the queues' room (see stop). */
  private readonly stopQueues: (() => void) | undefined;
  /** Stops hearing the dispatcher's reports (see stop). */
  private readonly stopListening: (() => void) | undefined;
  private readonly decideOptions = {
    renderProblem: (task: TaskState): string | undefined => this.admissions.renderProblem(task),
  };
  /** Counters for benchmarks and `chronolog up`'s status line. */
  readonly stats = { dispatched: 0, completed: 0, failed: 0, passes: 0, conflicts: 0 };

  constructor(private readonly o: SchedulerOptions) {
    this.log = o.log;
    this.projection = o.projection;
    this.now = o.now ?? Date.now;
    this.leases = o.leases ?? new LeaseBook();
    const random = o.random ?? Math.random;
    const newToken = o.newToken ?? randomId;
    this.agenda = new Agenda(
      this.now,
      () => this.schedulePass(),
      (id) => {
        const spec = this.projection.tasks.get(id)?.spec;
        return spec !== undefined && (spec.connection !== undefined || spec.workflow !== undefined);
      },
    );
    this.ownership = new Ownership(o.projection, o.membership);
    this.outbox = new Outbox(o.dispatcher, this.ownership, o.logger, o.observer, this.stats);
    this.connections = new ConnectionSlots(o.log, this.agenda);
    this.runSlots = new RunSlots(this.agenda);
    // The scheduler's intents and successes, one chain of appends (see AppendChain).
    const chain = new AppendChain();
    this.intents = new IntentWriter(o.log, o.projection, this.connections, newToken, chain);
    this.runs = new RunKeeper(o.log, o.projection, {
      runSlots: this.runSlots,
      ownership: this.ownership,
      agenda: this.agenda,
      outbox: this.outbox,
      stats: this.stats,
      logger: o.logger,
    });
    this.admissions = new Admissions({
      log: o.log,
      projection: o.projection,
      connections: this.connections,
      runSlots: this.runSlots,
      intents: this.intents,
      runs: this.runs,
      inflight: this.inflight,
      agenda: this.agenda,
      outbox: this.outbox,
      stats: this.stats,
      logger: o.logger,
      now: this.now,
      ...(o.queues ? { queues: o.queues } : {}),
    });
    this.commits = new SuccessCommits({
      log: o.log,
      projection: o.projection,
      runSlots: this.runSlots,
      inflight: this.inflight,
      leases: this.leases,
      outbox: this.outbox,
      ownership: this.ownership,
      agenda: this.agenda,
      now: this.now,
      random,
      newToken,
      logger: o.logger,
      chain,
      ...(o.queues ? { queues: o.queues } : {}),
    });
    this.deadlines = new DeadlineWatch({
      log: o.log,
      projection: o.projection,
      now: this.now,
      owns: (task) => this.owns(task),
      logger: o.logger,
      decideOptions: this.decideOptions,
    });
    this.stopQueues = o.queues?.onChange((queue) => this.agenda.wakeWaiters(`queue:${queue}`));
    // Every report of an attempt, heartbeats too, goes through the report decider.
    this.stopListening = o.dispatcher.onReport((report) =>
      report.kind !== "known" && report.kind !== "ready" ? this.commits.submit(report) : undefined,
    );
  }

  /** Follows the log from the projection's position; every task is evaluated once at start. */
  async start(): Promise<void> {
    // (Fenced already: nothing of this scheduler's runs yet, so there is nothing to kill.)
    this.fenced = this.o.membership?.fenced?.() ?? false;
    this.unsubscribeMembership = this.o.membership?.onChange(() => this.ownershipChanged()) ?? null;
    for (const inst of this.projection.instances.values()) this.connections.track(inst);
    this.agenda.markAll(this.projection.tasks.keys());
    for (const [id, r] of this.projection.runs) if (r.status === "running") this.runsDirty.add(id);
    this.subscription = this.log.subscribe((e) => this.onEvent(e), {
      fromPosition: this.projection.position + 1n,
    });
    await this.subscription.caughtUp;
    this.deadlines.start();
    this.schedulePass();
  }

  /** Whether nothing new starts: stopped, or draining for a shutdown. */
  get halted(): boolean {
    return this.agenda.halted;
  }

  /**
   * Starts no new attempt from now on, and keeps applying the reports of those running: the
   * first step of a shutdown that lets running work finish (then stop).
   */
  stopDispatching(): void {
    this.agenda.halted = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.agenda.halted = true;
    this.unsubscribeMembership?.();
    // A dispatcher outlives its scheduler (one pool serves the next one): stop hearing its reports.
    this.stopListening?.();
    this.stopQueues?.();
    this.agenda.stop();
    this.deadlines.stop();
    await this.commits.idle();
    await this.subscription?.close();
  }

  /** Resolves when the subscription fails (it never ends otherwise until stop). */
  get done(): Promise<void> {
    return this.subscription?.done ?? Promise.resolve();
  }

  private onEvent(e: RecordedEvent): void {
    // A run failed fast, decided by whichever scheduler holds it, or an attempt abandoned (by an
    // operator, or as never confirmed; a worker frozen meanwhile may still hold it): stop it
    // where it runs, if one of ours does, before it does its work after all.
    if (e.type === "AttemptCancelled") this.o.dispatcher.cancel(e.data.token, e.data.reason);
    else if (e.type === "AttemptAbandoned")
      this.o.dispatcher.cancel(e.data.token, `abandoned by ${e.data.by}: ${e.data.reason}`);
    const before = e.streamId.startsWith("instance-") ? this.projection.instances.get(e.streamId) : undefined;
    const touched = this.projection.apply(e);
    this.o.observer?.applied?.(e);
    if (touched.instance) {
      this.commits.observed(touched.instance, e.revision);
      const after = this.projection.instances.get(touched.instance);
      this.connections.update(before, after, touched.instance);
      // The run now counts the attempt itself: the slot held for it until now is released.
      if (e.type === "DispatchIntended" && after?.runId && this.runSlots.holdsAny)
        this.runSlots.release(after.runId, formatTaskKey(after.key), false);
    }
    if (touched.run) this.schedulePass();
    if (touched.task) {
      this.markDirty(touched.task);
      if (e.streamId.startsWith("task-"))
        this.deadlines.taskEvent(
          touched.task,
          e.type,
          e.data as { logicalDate?: string },
          e.metadata.recordedAt,
        );
      if (
        e.type === "IntervalCompleted" ||
        e.type === "IntervalFailed" ||
        e.type === "IntervalReset" ||
        e.type === "TaskDeclared"
      ) {
        if (e.type === "IntervalCompleted") this.stats.completed += 1;
        // (A child with a write under way, one its parent's success started among them, is
        // decided when that write is seen: it is not decided twice.)
        for (const child of this.projection.children.of(touched.task))
          if (!this.inflight.has(child)) this.markDirty(child);
      }
    }
    if (touched.connection) this.agenda.wakeWaiters(touched.connection);
    if (touched.run) {
      this.runsDirty.add(touched.run);
      if (e.type === "RunStarted") this.runSlots.runStarted(touched.run);
      if (e.type === "RunFinished") {
        const run = this.projection.runs.get(touched.run);
        if (run) this.runSlots.forgetWaits(run);
      }
    }
  }

  /** Whether this scheduler decides for the task (always, without a membership). */
  owns(task: { readonly id: string; readonly spec: { readonly workflow?: string } }): boolean {
    return this.ownership.owns(task);
  }

  /** Whether this scheduler looks after the instance (its task's shard is held here). */
  ownsInstance(inst: InstanceState): boolean {
    return this.ownership.ownsInstance(inst);
  }

  onDispatched(listener: (tokens: readonly string[]) => void): () => void {
    return this.outbox.onDispatched(listener);
  }

  /**
   * Shards moved, or the membership's fence came down or lifted: every task and running run is
   * looked at again (only owned ones act).
   */
  private ownershipChanged(): void {
    if (this.stopped) return;
    const m = this.o.membership;
    const fenced = m?.fenced?.() ?? false;
    if (m && fenced !== this.fenced) {
      this.fenced = fenced;
      if (fenced) {
        // The group may drop this scheduler any moment now, unheard, and the others take what
        // runs on its workers for lost: nothing of it may run on by then.
        const killed =
          this.o.dispatcher.killAll?.(`scheduler ${m.id} was fenced (cut off from its group)`) ?? 0;
        this.o.logger.warn(
          { scheduler: m.id, killed },
          "fenced: could not renew the scheduler group membership in time; holding no shards and killed the attempts on this scheduler's workers",
        );
      } else
        this.o.logger.info({ scheduler: m.id }, "fence lifted: the scheduler group membership is renewed");
    }
    this.agenda.markAll(this.projection.tasks.keys());
    for (const [id, r] of this.projection.runs) if (r.status === "running") this.runsDirty.add(id);
    this.schedulePass();
  }

  /** Re-evaluates a run on the next pass (a run left running with every task terminal). */
  wakeRun(runId: string): void {
    this.runsDirty.add(runId);
    this.schedulePass();
  }

  /** Whether a worker's report for the instance waits to be written by this scheduler. */
  hasPendingReport(stream: string): boolean {
    return this.commits.hasPending(stream);
  }

  /** Re-evaluates a task on the next pass. */
  wake(id: string): void {
    this.markDirty(id);
  }

  /**
   * Records an attempt interrupted by the end of the scheduler process whose worker ran it, as
   * a worker's report of a shutdown would: not the task's failure, so apart from its budget.
   */
  reportInterrupted(inst: InstanceState, reason: string): void {
    const a = inst.attempts.at(-1);
    if (!a) return;
    this.commits.submit({
      kind: "failed",
      token: a.token,
      attempt: a.attempt,
      instanceStream: inst.stream,
      workerId: a.workerId ?? "unknown",
      at: new Date(this.now()).toISOString(),
      durationMs: 0,
      exitCode: null,
      error: { kind: "interrupted", message: reason },
      stdoutTail: "",
      stderrTail: "",
    });
  }

  private markDirty(id: string): void {
    this.agenda.wake(id);
  }

  private schedulePass(): void {
    if (this.passScheduled || this.halted) return;
    this.passScheduled = true;
    setImmediate(() => {
      this.passScheduled = false;
      this.pass().catch((error) => this.o.logger.error({ err: error }, "scheduler pass failed"));
    });
  }

  // ---- the pass ---------------------------------------------------------------------------

  private async pass(): Promise<void> {
    if (this.halted) return;
    if (this.runsDirty.size > 0) {
      const runs = [...this.runsDirty];
      this.runsDirty.clear();
      await Promise.all(runs.map((r) => this.runs.evaluate(r)));
    }
    if (this.agenda.dirtyCount === 0) return;
    this.stats.passes += 1;
    const ids = this.takeDirty();
    const now = this.now();
    const writes: Array<Promise<void>> = [];
    const free: Free[] = [];
    for (const id of ids) {
      const task = this.projection.tasks.get(id);
      if (!task || !this.inflight.settled(id, this.projection.position)) continue;
      if (task.status === "retired" || !this.owns(task)) continue;
      try {
        const d = decideStanding(this.projection, task, now, this.decideOptions);
        if (d.kind !== "stuck" && this.stuck.size > 0) this.stuck.delete(task.id);
        this.act(task, d, writes, free);
      } catch (error) {
        // A bug in one task's decision must not stop the pass for the others.
        this.o.logger.error({ err: error, task: task.id }, "could not decide for the task");
        this.agenda.wakeAt(task.id, this.now() + STUCK_RECHECK_MS);
      }
    }
    if (free.length > 0) writes.push(this.admissions.dispatchAll(free));
    await Promise.all(writes);
  }

  /**
   * The tasks this pass decides: every dirty one, but of a large burst of tasks that share no
   * limit (no connection, no workflow) at most PASS_TASKS, the rest left dirty for the pass
   * right after. Deciding such a burst in pieces keeps what is in flight at once small (every
   * intent of a piece is written in one commit, and the garbage collector copies less of it)
   * and hands the first attempts to the workers sooner; tasks that share a limit are all decided
   * together, so that its free slots still go to the highest claim first (see Agenda.take).
   */
  private takeDirty(): string[] {
    const ids = this.agenda.take(PASS_TASKS);
    if (this.agenda.dirtyCount > 0) this.schedulePass();
    return ids;
  }

  /** Acts on a task's standing: its event written, a timer set, or free to start. */
  private act(task: TaskState, d: TaskDecision, writes: Array<Promise<void>>, free: Free[]): void {
    switch (d.kind) {
      case "complete":
      case "fail":
        writes.push(this.writeTask(task, [d.event]));
        return;
      case "catchup_jump":
        // A move, as an operator's is: checked where the task stood (see standingChecks), so
        // that an attempt another scheduler dispatched there meanwhile is seen before it jumps.
        writes.push(
          this.writeTask(
            task,
            [d.event],
            standingChecks(this.log, this.projection, [
              { streamId: taskStream(task.key), events: [d.event] },
            ]),
          ),
        );
        return;
      case "retry_at":
      case "not_due":
        this.agenda.wakeAt(task.id, Date.parse(d.at));
        return;
      case "stuck":
        // Said once per cause; looked at again in a while (a new declaration wakes it at once).
        if (this.stuck.get(task.id) !== d.message) {
          this.stuck.set(task.id, d.message);
          this.o.logger.error(
            { task: task.id, interval: task.logicalDate, step: d.step, err: d.message },
            "task cannot move on: its schedule could not be computed",
          );
        }
        this.agenda.wakeAt(task.id, this.now() + STUCK_RECHECK_MS);
        return;
      case "ready":
        free.push({ task, standing: d });
        return;
      // The instance's next event, a parent's advance or an operator wakes these.
      case "held":
      case "blocked":
      case "failed":
      case "running":
      case "queued":
      case "paused":
      case "retired":
      case "schedule_ended":
        return;
      default:
        unreachable(d);
    }
  }

  /** The alert of a task halting on its own failure, raised in the append that records it. */
  private haltAlerts(task: TaskState, events: readonly DomainEvent[]): StreamWrite[] {
    const halt = events.find((e) => e.type === "IntervalFailed");
    if (halt?.type !== "IntervalFailed" || (halt.data.state !== "failed" && halt.data.state !== "abandoned"))
      return [];
    return alertWrites(
      this.projection,
      "task_failed",
      { task: task.key, logicalDate: halt.data.logicalDate, reason: halt.data.reason },
      `r${task.revision + 1n}`,
    );
  }

  /**
   * A compare-and-set append on the task stream, with the streams it `checks` (read in the turn
   * it was decided in); a conflict on any just means: decide again.
   */
  private async writeTask(
    task: TaskState,
    events: DomainEvent[],
    checks?: Promise<readonly StreamCheck[]>,
  ): Promise<void> {
    this.inflight.pending(task.id);
    try {
      const found = checks ? await checks : [];
      const outcome = await handleCommand(this.log, {
        name: `advance ${task.id}`,
        read: () => task,
        decide: (t) => ({
          writes: [
            { streamId: taskStream(t.key), events, expectedRevision: t.revision },
            ...this.haltAlerts(t, events),
          ],
          result: null,
        }),
        ...(found.length > 0 ? { append: (writes) => this.log.appendMany(writes, { checks: found }) } : {}),
      });
      if (outcome.kind === "conflict") {
        this.stats.conflicts += 1;
        const moved = outcome.error.streamId;
        if (found.some((c) => c.streamId === moved)) {
          // A stream it checked moved (another scheduler's attempt where the task stood): decided
          // again once the projection has seen that, not at once on the projection that missed it.
          const last = (await this.log.readStream(moved)).at(-1)?.position;
          if (last !== undefined) this.inflight.at(task.id, last);
          else this.inflight.clear(task.id);
        } else this.inflight.clear(task.id);
        this.markDirty(task.id);
        return;
      }
      if (outcome.kind === "written")
        this.inflight.at(task.id, (outcome.results[0] as { position: bigint }).position);
      if (events.some((e) => e.type === "IntervalFailed")) this.stats.failed += 1;
    } catch (error) {
      this.inflight.clear(task.id);
      this.o.logger.error({ err: error, task: task.id }, "could not write to the task stream");
      this.agenda.wakeAt(task.id, this.now() + 1000); // try again
    }
  }
}
