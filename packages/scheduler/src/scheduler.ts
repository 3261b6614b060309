import {
  admitTask,
  type DomainEvent,
  decideStanding,
  formatTaskKey,
  type Hold,
  type InstanceState,
  instanceStream,
  type RunAdmission,
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
  type StreamWrite,
  type Subscription,
} from "@chronolog/log";
import type { RunCommand } from "@chronolog/worker";
import { ConnectionSlots } from "./admission/connection-slots.js";
import { PassSlots } from "./admission/pass-slots.js";
import { RunSlots } from "./admission/run-slots.js";
import { alertWrites } from "./alerts.js";
import { handleCommand } from "./command.js";
import type { Dispatcher } from "./dispatcher.js";
import { InFlight } from "./inflight.js";
import { IntentCommand, type IntentOutcome, IntentWriter } from "./intent-writer.js";
import type { Membership } from "./membership.js";
import { Outbox } from "./outbox.js";
import { Ownership } from "./ownership.js";
import { LeaseBook } from "./reconcile/lease-book.js";
import type { ReconciledScheduler } from "./reconcile/reconciler.js";
import { RunKeeper } from "./run-keeper.js";
import type { SchedulerLogger, SchedulerObserver } from "./scheduler-types.js";
import { setIn } from "./sets.js";
import { SuccessCommits } from "./success-commit.js";
import { TimerQueue } from "./timer-queue.js";

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
}

/** How often a task whose schedule could not be computed is looked at again. */
const STUCK_RECHECK_MS = 60_000;
/** Most tasks that share no limit one pass decides (see takeDirty). */
const PASS_TASKS = 1000;

/** A task the pass found free to start, before the limits are applied. */
interface Free {
  readonly task: TaskState;
  /** Its standing: ready, with the instance in memory when this is a retry. */
  readonly standing: TaskDecision & { readonly kind: "ready" };
}

/** A task admitted to its limits, about to have its intent written. */
interface Admitted {
  readonly task: TaskState;
  /** The instance in memory, when this is a retry. */
  readonly retry: InstanceState | null;
  readonly run: RunAdmission | null;
  /** The connection stream's revision its slot was counted at: the take's compare-and-set. */
  readonly countedAt: bigint | undefined;
}

/**
 * The scheduler: follows the log into the projection, keeps the sets of tasks to look at again
 * (dirty ones, and those waiting on a connection or a run), and on each pass acts on the core's
 * `decideTask` for each: writes the event a decision carries, or admits the tasks free to start
 * to their limits (in the order free slots are given out), writes their intents durably and
 * hands them to the workers. The rooms it wires together: ConnectionSlots and RunSlots (the
 * limits), IntentWriter (render, intent, slot take), SuccessCommits (a worker's reports: a
 * success with the children it starts, in one append), RunKeeper (runs), and the Outbox (the
 * one way out to the workers).
 */
export class Scheduler implements ReconciledScheduler {
  private readonly log: EventLog;
  private readonly projection: SchedulerProjection;
  private readonly now: () => number;
  private readonly timers: TimerQueue;
  private readonly commits: SuccessCommits;
  private readonly connections: ConnectionSlots;
  private readonly runSlots: RunSlots;
  private readonly intents: IntentWriter;
  private readonly runs: RunKeeper;
  private readonly ownership: Ownership;
  private readonly outbox: Outbox;
  readonly inflight = new InFlight();
  /** Leases of running attempts, renewed by their workers' reports (the reconcile loop reads them). */
  readonly leases = new LeaseBook();
  private subscription: Subscription | null = null;
  private unsubscribeMembership: (() => void) | null = null;
  private readonly dirty = new Set<string>();
  /** Tasks whose schedule could not be computed, with the cause last logged for each. */
  private readonly stuck = new Map<string, string>();
  /** Runs changed since the last pass. */
  private readonly runsDirty = new Set<string>();
  /** key (a connection, `run:<run id>` or `run:<workflow>`) -> tasks to look at again when it wakes. */
  private readonly waiting = new Map<string, Set<string>>();
  private passScheduled = false;
  private stopped = false;
  /** The membership's fence, as this scheduler last acted on it (see ownershipChanged). */
  private fenced = false;
  /** No new attempts start (a shutdown waits for the running ones): reports are still applied. */
  private draining = false;
  /** Stops hearing the dispatcher's reports (see stop). */
  private readonly stopListening: (() => void) | undefined;
  /** Tasks whose payload did not render, for which interval and declaration (they are held). */
  private readonly renderFailures = new Map<
    string,
    { logicalDate: string; revision: bigint; message: string }
  >();
  private readonly decideOptions = {
    renderProblem: (task: TaskState): string | undefined => {
      if (this.renderFailures.size === 0) return undefined;
      const f = this.renderFailures.get(task.id);
      if (!f) return undefined;
      if (f.logicalDate === task.logicalDate && f.revision === task.revision) return f.message;
      this.renderFailures.delete(task.id);
      return undefined;
    },
  };
  /** Counters for benchmarks and `chronolog up`'s status line. */
  readonly stats = { dispatched: 0, completed: 0, failed: 0, passes: 0, conflicts: 0 };

  constructor(private readonly o: SchedulerOptions) {
    this.log = o.log;
    this.projection = o.projection;
    this.now = o.now ?? Date.now;
    const random = o.random ?? Math.random;
    const newToken = o.newToken ?? randomId;
    this.timers = new TimerQueue((keys) => {
      for (const k of keys) this.dirty.add(k);
      this.schedulePass();
    }, this.now);
    this.ownership = new Ownership(o.projection, o.membership);
    this.outbox = new Outbox(o.dispatcher, this.ownership, o.logger, o.observer, this.stats);
    this.connections = new ConnectionSlots(o.log, (conn) => this.wakeWaiters(conn));
    this.runSlots = new RunSlots((runId) => this.wakeWaiters(`run:${runId}`));
    this.intents = new IntentWriter(o.log, o.projection, this.connections, newToken);
    this.runs = new RunKeeper(o.log, o.projection, o.dispatcher, this.runSlots, {
      owns: (t) => this.owns(t),
      wakeWaiters: (key) => this.wakeWaiters(key),
      conflict: () => {
        this.stats.conflicts += 1;
      },
      error: (err, context, msg) => o.logger.error({ err, ...context }, msg),
    });
    this.commits = new SuccessCommits({
      log: o.log,
      projection: o.projection,
      runSlots: this.runSlots,
      inflight: this.inflight,
      leases: this.leases,
      outbox: this.outbox,
      ownership: this.ownership,
      halted: () => this.halted,
      now: this.now,
      random,
      newToken,
      logger: o.logger,
    });
    // Every report of an attempt, heartbeats too, goes through the report decider.
    this.stopListening = o.dispatcher.onReport((report) => {
      if (report.kind !== "known" && report.kind !== "ready") this.commits.submit(report);
    });
  }

  /** Follows the log from the projection's position; every task is evaluated once at start. */
  async start(): Promise<void> {
    // (Fenced already: nothing of this scheduler's runs yet, so there is nothing to kill.)
    this.fenced = this.o.membership?.fenced?.() ?? false;
    this.unsubscribeMembership = this.o.membership?.onChange(() => this.ownershipChanged()) ?? null;
    for (const inst of this.projection.instances.values()) this.connections.track(inst);
    for (const id of this.projection.tasks.keys()) this.dirty.add(id);
    for (const [id, r] of this.projection.runs) if (r.status === "running") this.runsDirty.add(id);
    this.subscription = this.log.subscribe((e) => this.onEvent(e), {
      fromPosition: this.projection.position + 1n,
    });
    await this.subscription.caughtUp;
    this.schedulePass();
  }

  /** Whether nothing new starts: stopped, or draining for a shutdown. */
  get halted(): boolean {
    return this.stopped || this.draining;
  }

  /**
   * Starts no new attempt from now on, and keeps applying the reports of those running: the
   * first step of a shutdown that lets running work finish (then stop).
   */
  stopDispatching(): void {
    this.draining = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribeMembership?.();
    // A dispatcher outlives its scheduler (one pool serves the next one): stop hearing its reports.
    this.stopListening?.();
    this.timers.stop();
    await this.commits.idle();
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
    if (touched.connection) this.wakeWaiters(touched.connection);
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
    for (const id of this.projection.tasks.keys()) this.dirty.add(id);
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

  /** Records an attempt as lost, exactly as a worker supervisor's report would. */
  reportLost(inst: InstanceState, reason: string): void {
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
      error: { kind: "lost", message: reason },
      stdoutTail: "",
      stderrTail: "",
    });
  }

  private markDirty(id: string): void {
    this.dirty.add(id);
    this.schedulePass();
  }

  /** The task is looked at again when `key` (a connection, or `run:` a run or workflow) wakes. */
  private waitOn(key: string, taskId: string): void {
    setIn(this.waiting, key).add(taskId);
  }

  private wakeWaiters(key: string): void {
    const w = this.waiting.get(key);
    if (!w || w.size === 0) return;
    this.waiting.delete(key);
    for (const id of w) this.markDirty(id);
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
    if (this.dirty.size === 0) return;
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
        this.timers.wakeAt(task.id, this.now() + STUCK_RECHECK_MS);
      }
    }
    if (free.length > 0) writes.push(this.dispatchAll(free));
    await Promise.all(writes);
  }

  /**
   * The tasks this pass decides: every dirty one, but of a large burst of tasks that share no
   * limit (no connection, no workflow) at most PASS_TASKS, the rest left dirty for the pass
   * right after. Deciding such a burst in pieces keeps what is in flight at once small (every
   * intent of a piece is written in one commit, and the garbage collector copies less of it)
   * and hands the first attempts to the workers sooner; tasks that share a limit are all decided
   * together, so that its free slots still go to the oldest interval first.
   */
  private takeDirty(): string[] {
    if (this.dirty.size <= PASS_TASKS) {
      const all = [...this.dirty];
      this.dirty.clear();
      return all;
    }
    const ids: string[] = [];
    let free = 0;
    for (const id of this.dirty) {
      const spec = this.projection.tasks.get(id)?.spec;
      if (spec?.connection === undefined && spec?.workflow === undefined) {
        if (free === PASS_TASKS) continue;
        free += 1;
      }
      ids.push(id);
    }
    for (const id of ids) this.dirty.delete(id);
    if (this.dirty.size > 0) this.schedulePass();
    return ids;
  }

  /** Acts on a task's standing: its event written, a timer set, or free to start. */
  private act(task: TaskState, d: TaskDecision, writes: Array<Promise<void>>, free: Free[]): void {
    switch (d.kind) {
      case "complete":
      case "fail":
      case "catchup_jump":
        writes.push(this.writeTask(task, [d.event]));
        return;
      case "retry_at":
      case "not_due":
        this.timers.wakeAt(task.id, Date.parse(d.at));
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
        this.timers.wakeAt(task.id, this.now() + STUCK_RECHECK_MS);
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

  /** A compare-and-set append on the task stream; a conflict just means: decide again. */
  private async writeTask(task: TaskState, events: DomainEvent[]): Promise<void> {
    this.inflight.pending(task.id);
    try {
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
      });
      if (outcome.kind === "conflict") {
        this.inflight.clear(task.id);
        this.stats.conflicts += 1;
        this.markDirty(task.id);
        return;
      }
      if (outcome.kind === "written")
        this.inflight.at(task.id, (outcome.results[0] as { position: bigint }).position);
      if (events.some((e) => e.type === "IntervalFailed")) this.stats.failed += 1;
    } catch (error) {
      this.inflight.clear(task.id);
      this.o.logger.error({ err: error, task: task.id }, "could not write to the task stream");
      this.timers.wakeAt(task.id, this.now() + 1000); // try again
    }
  }

  // ---- limits, intents, dispatch ---------------------------------------------------------------

  /**
   * Admits the free tasks to their limits with the core's `admitTask`, one after another on the
   * slots the ones before left: the oldest interval first and, within one, the task that has
   * waited longest for a slot. Starts the runs they start, then writes their intents.
   */
  private async dispatchAll(free: Free[]): Promise<void> {
    const slots = new PassSlots(this.projection, this.connections, this.runSlots);
    const admitted: Admitted[] = [];
    for (const c of this.inOrder(free)) {
      const d = admitTask(this.projection, c.task, c.standing, slots);
      if (d.kind === "held") {
        this.hold(c.task, d.hold);
        continue;
      }
      if (d.kind !== "ready") continue;
      if (d.run) this.runSlots.stopWaiting(c.task.id);
      const conn = c.task.spec.connection;
      const countedAt = conn ? this.projection.connectionRevisions.get(conn) : undefined;
      // In flight from its admission: a pass that overlaps this one does not admit it again.
      this.inflight.pending(c.task.id);
      slots.take(c.task, d.run);
      admitted.push({ task: c.task, retry: d.retry, run: d.run, countedAt });
    }
    const started = slots.toStart.size > 0 ? await this.runs.start(slots.toStart) : new Set<string>();
    const going = admitted.filter((c) => {
      if (!c.run || started.has(c.run.runId) || this.projection.runs.get(c.run.runId)?.status === "running")
        return true;
      // Its run could not be started (the error is logged): give its slots back, try again later.
      slots.giveBack(c.task, c.run);
      this.inflight.clear(c.task.id);
      this.timers.wakeAt(c.task.id, this.now() + 1000);
      return false;
    });
    const commands = await Promise.all(going.map((c) => this.dispatchOne(c)));
    this.send(commands.filter((c): c is RunCommand => c !== null));
  }

  private inOrder(free: Free[]): Free[] {
    if (free.length < 2 || (!this.runSlots.anyWaiting && !free.some((c) => c.task.spec.connection)))
      return free;
    return free
      .map((c, i) => ({ c, i, since: this.runSlots.waitingSince(c.task.id, c.task.logicalDate) }))
      .sort(
        (a, b) =>
          cmp(a.c.task.logicalDate, b.c.task.logicalDate) ||
          a.since - b.since ||
          cmp(a.c.task.id, b.c.task.id) ||
          a.i - b.i,
      )
      .map((x) => x.c);
  }

  /** A task held by a limit waits for it to free a slot. */
  private hold(task: TaskState, h: Hold): void {
    switch (h.on) {
      case "connection":
      case "connection_undeclared":
        // (An undeclared connection's declaration, perhaps later in the same file, wakes it.)
        this.waitOn(h.connection, task.id);
        // It had a slot in its run: it no longer waits for one.
        this.runSlots.stopWaiting(task.id);
        return;
      case "run_slots":
        this.waitOn(`run:${h.runId}`, task.id);
        this.runSlots.wait(task.id, task.logicalDate);
        return;
      case "active_runs":
        this.waitOn(`run:${h.workflow}`, task.id);
        return;
      case "run_failed_fast":
      case "earlier_attempt":
      case "render_failed":
        return;
      default:
        unreachable(h);
    }
  }

  /** Writes one admitted task's intent (durably); returns the command to send, or null. */
  private async dispatchOne(c: Admitted): Promise<RunCommand | null> {
    const { task } = c;
    const conn = task.spec.connection;
    // (In flight since its admission.) The reservation becomes load when the projection applies the intent (and is freed again
    // with the cache hit that comes with it): released once, there.
    let written = false;
    let dispatched = false;
    let waitsForSlot = false;
    try {
      // (The handler is awaited here, not inside the intent writer: one promise less per intent.)
      const command = this.intents.prepare(task, c.retry, c.countedAt);
      let o: IntentOutcome;
      if (!(command instanceof IntentCommand)) o = command;
      else {
        try {
          o = this.intents.outcome(command, await handleCommand(this.log, command));
        } catch (error) {
          o = this.intents.outcome(command, { error });
        }
      }
      switch (o.kind) {
        case "dispatch":
          this.inflight.at(task.id, o.position);
          written = true;
          dispatched = true;
          return o.command;
        case "cache_hit":
          this.inflight.at(task.id, o.position);
          written = true;
          return null;
        case "render_failed":
          // Held until its declaration changes (decideTask says so, with the message).
          this.inflight.clear(task.id);
          this.renderFailures.set(task.id, {
            logicalDate: task.logicalDate,
            revision: task.revision,
            message: o.error.message,
          });
          this.o.logger.error({ task: task.id, err: o.error }, "payload render failed; the task is held");
          return null;
        case "look_again":
          // Decided elsewhere: decide again once this scheduler has seen as far as the log it read.
          this.inflight.at(task.id, o.until);
          this.timers.wakeAt(task.id, this.now() + 1);
          return null;
        case "slot_conflict":
          this.inflight.clear(task.id);
          this.stats.conflicts += 1;
          if (o.seenAfter && conn) {
            this.waitOn(conn, task.id);
            waitsForSlot = true;
          } else this.markDirty(task.id);
          return null;
        case "in_flight":
        case "conflict":
          this.inflight.clear(task.id);
          this.stats.conflicts += 1;
          this.markDirty(task.id);
          return null;
        default:
          return unreachable(o);
      }
    } catch (error) {
      this.inflight.clear(task.id);
      this.o.logger.error({ err: error, task: task.id }, "could not write the dispatch intent");
      this.timers.wakeAt(task.id, this.now() + 1000); // try again
      return null;
    } finally {
      // (Not waking the connection's waiters when this task just joined them to wait for a take.)
      if (conn && !written)
        this.connections.release(conn, instanceStream(task.key, task.logicalDate), !waitsForSlot);
      // An intent not written (or a cache hit, done at once) gives its run slot back now; one
      // written gives it back when the projection shows it, as queued.
      if (c.run && !dispatched) this.runSlots.release(c.run.runId, task.id, true);
    }
  }

  /** Hands attempts whose intents are durable to the workers (see Outbox). */
  send(commands: readonly RunCommand[]): void {
    this.outbox.send(commands);
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
