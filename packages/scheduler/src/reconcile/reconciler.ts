import {
  checkLostWorker,
  currentAttempt,
  type DomainEvent,
  decideExpiredLease,
  decideLostWorker,
  decideStuckInstance,
  decideUnconfirmedIntent,
  formatTaskKey,
  type InstanceState,
  intentGrace,
  isUnconfirmed,
  needsScheduler,
  runNeedsRepair,
  type SchedulerProjection,
} from "@chronolog/core";
import type { EventLog, StreamWrite } from "@chronolog/log";
import { alertWrites } from "../alerts.js";
import { handleCommand } from "../command.js";
import type { Dispatcher } from "../dispatcher.js";
import { LeaseBook } from "./lease-book.js";

export interface ReconcilerOptions {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly dispatcher: Dispatcher;
  readonly actor: string;
  /** Time between passes. */
  readonly intervalMs?: number;
  /** How long a dispatch this process made may stay unconfirmed before the unconfirmed-intent check looks at it. */
  readonly confirmGraceMs?: number;
  readonly now?: () => number;
  /** The scheduler this loop works beside (none: the loop only repairs the log). */
  readonly scheduler?: ReconciledScheduler;
  readonly logger?: { warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void };
  /**
   * Whether the worker named in an AttemptStarted is known to be gone. In embedded mode the
   * workers live and die with the scheduler process that forked them, so a worker of an earlier
   * scheduler process is gone; its attempts are reported lost, as its supervisor would have.
   */
  readonly isWorkerGone?: (workerId: string) => boolean;
  /**
   * Whether a worker is one of this process's own. Their attempts' leases are kept here (their
   * heartbeats arrive here), whoever holds the shard; an attempt on a live worker of another
   * scheduler is that scheduler's to watch.
   */
  readonly isOwnWorker?: (workerId: string) => boolean;
  /**
   * Whether an attempt runs on a worker no scheduler process forked (a remote worker): the
   * scheduler that owns its shard watches it, whoever gave it.
   */
  readonly isRemoteWorker?: (workerId: string) => boolean;
  /**
   * Whether a running attempt on a remote worker is held by none of the workers connected here
   * (it was given by a scheduler that died, or before a restart): the loop asks the connected
   * workers about it every pass, and the one that knows it is given it (adopted).
   */
  readonly unheldRemote?: (token: string) => boolean;
  /** Grace for an intent this process did not dispatch (another scheduler's). Default: confirmGraceMs. */
  readonly foreignIntentGraceMs?: number;
}

/** What the reconcile loop asks of the scheduler it works beside, and hears from it. */
export interface ReconciledScheduler {
  /** Decide the task again: its instance ended and the scheduler has not recorded the outcome. */
  wake(taskId: string): void;
  /** Decide the run again: it is left running with every task terminal. */
  wakeRun(runId: string): void;
  /** Record an attempt as interrupted by the end of its scheduler process (the path of a worker's report). */
  reportInterrupted(inst: InstanceState, reason: string): void;
  /**
   * Whether a report for the instance's attempt waits to be written: a worker that finished
   * it no longer knows the attempt, but it was confirmed all the same.
   */
  hasPendingReport(stream: string): boolean;
  /** With several schedulers: whether this process looks after the instance (its task's shard). */
  ownsInstance(inst: InstanceState): boolean;
  /** Hear of the tokens of attempts as they are handed to workers; returns how to stop. */
  onDispatched(listener: (tokens: readonly string[]) => void): () => void;
  /** The leases its workers' reports renew, through the report decider. */
  readonly leases: LeaseBook;
}

export interface PassResult {
  readonly unconfirmed: number;
  readonly expired: number;
  readonly stuck: number;
  readonly lost: number;
  readonly written: number;
  readonly conflicts: number;
}

/**
 * The reconcile loop: on a timer, compares the projected state of active work with what the
 * workers report, and repairs what it finds. The checks themselves (unconfirmed intent, expired
 * lease, stuck instance, lost worker) are the core's pure deciders; this loop gathers their
 * facts (leases, dispatch times, which workers are gone or its own, what the workers know),
 * then writes or reports what they decide. A pass costs O(active instances), never O(history).
 * Every write is a compare-and-set on the attempt stream at the revision the pass observed, so
 * two reconcilers, or a pass overlapping the next, cannot both act: the loser gets a conflict
 * and looks again next pass.
 */
export class Reconciler {
  /** The scheduler's leases; a loop without one keeps its own, from the workers' reports. */
  readonly leases: LeaseBook;
  /** token -> when this process handed the attempt to a worker. */
  private readonly dispatchedAt = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<PassResult> | null = null;
  private stopListening: (() => void) | undefined;
  private readonly now: () => number;
  readonly totals = { passes: 0, written: 0, conflicts: 0 };

  /**
   * What the grace of an earlier process's remote intents counts from: when the passes began (a
   * restarted scheduler catches up on the log first, and its remote workers reconnect once it
   * takes registrations, before then), or, for passes run without start, when the loop was made.
   */
  private listeningSince: number;
  private started = false;

  constructor(private readonly o: ReconcilerOptions) {
    this.now = o.now ?? Date.now;
    this.listeningSince = this.now();
    this.leases = o.scheduler?.leases ?? new LeaseBook();
    this.listen();
  }

  /**
   * Hears of the attempts handed to workers, from construction until stop (and again after
   * start). Without a scheduler (whose report decider renews the leases), worker reports extend
   * and end the leases here.
   */
  private listen(): void {
    if (this.stopListening !== undefined) return;
    const reports =
      (!this.o.scheduler &&
        this.o.dispatcher.onReport((r) => {
          if (r.kind === "heartbeat" || r.kind === "started") {
            const inst = this.o.projection.instances.get(r.instanceStream);
            const lease = inst?.leaseSeconds ?? 30;
            this.leases.extend(r.token, this.now() + lease * 1000);
          } else if (r.kind === "succeeded" || r.kind === "failed") this.leases.forget(r.token);
        })) ||
      (() => {});
    const dispatches = this.o.scheduler?.onDispatched((tokens) => this.noteDispatched(tokens));
    this.stopListening = () => {
      reports();
      dispatches?.();
    };
  }

  /** How many attempts' dispatch times the loop holds (those that may still wait to be confirmed). */
  get dispatchTimesHeld(): number {
    return this.dispatchedAt.size;
  }

  /** Attempts handed to workers by this process: their grace to be confirmed counts from now. */
  noteDispatched(tokens: readonly string[]): void {
    const at = this.now();
    for (const t of tokens) this.dispatchedAt.set(t, at);
  }

  start(): void {
    this.listen();
    if (this.timer) return; // already started
    if (!this.started) this.listeningSince = this.now();
    this.started = true;
    const interval = this.o.intervalMs ?? 1000;
    const tick = () => {
      this.timer = setTimeout(async () => {
        try {
          await this.pass();
        } catch (error) {
          this.o.logger?.error({ err: error }, "reconcile pass failed");
        }
        if (this.timer) tick();
      }, interval);
    };
    tick();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // A dispatcher may outlive its reconciler (one pool serves the next one): stop hearing it.
    this.stopListening?.();
    this.stopListening = undefined;
  }

  /**
   * Settles, at start-up, the attempts an earlier process left in flight, without waiting for a
   * pass: one running (or lease-expired) on a worker `isWorkerGone` names is reported
   * interrupted, its worker gone with that process (see decideLostWorker); an intent that was never confirmed is abandoned, to be tried
   * again. Call it only where nothing of the earlier process can still run or dispatch (one
   * scheduler per embedded log, under the data directory's lock: its workers died with it), and
   * before this process has handed any attempt to a worker, so that every queued intent in the
   * projection is that process's. The workers are not asked: none of this process's has an
   * attempt yet. Intents of tasks on a queue are left to the passes: a remote worker outlives
   * the process that gave it an attempt, and reconnects here to say it holds it.
   * Returns the tokens of the attempts reported so (`lost`: they never run again: a retry is a new
   * attempt with a new token) and how many intents were abandoned.
   */
  async settleAtStart(): Promise<{ readonly lost: readonly string[]; readonly abandoned: number }> {
    const gone = this.o.isWorkerGone;
    const lost: InstanceState[] = [];
    const unconfirmed: InstanceState[] = [];
    for (const inst of this.o.projection.instances.values()) {
      const a = currentAttempt(inst);
      if (!a) continue;
      // An intent of a task on a queue may be in a remote worker's hands, which outlive this
      // process: left to the passes, which give it a lease (see intentGrace).
      if (isUnconfirmed(inst, Number.POSITIVE_INFINITY, 0)) {
        if (!this.onQueue(inst)) unconfirmed.push(inst);
      } else if (a.workerId && gone) {
        const check = checkLostWorker(inst, {
          workerGone: gone(a.workerId),
          ownWorker: true,
          leaseDeadline: undefined,
          now: this.now(),
        });
        if (check.kind === "lost") lost.push(inst);
      }
    }
    for (const inst of lost) {
      const decision = decideLostWorker(inst, false);
      if (decision.kind === "report_interrupted") this.o.scheduler?.reportInterrupted(inst, decision.reason);
    }
    const writes = unconfirmed.map((inst) =>
      this.write(
        inst,
        decideUnconfirmedIntent(inst, false, this.o.actor, true),
        "intent of an earlier process",
      ),
    );
    const written = (await Promise.all(writes)).filter(Boolean).length;
    this.totals.written += written;
    return { lost: lost.map((i) => currentAttempt(i)?.token as string), abandoned: written };
  }

  /** Whether the instance's task is on a queue (its attempts go to remote workers). */
  private onQueue(inst: InstanceState): boolean {
    return this.o.projection.tasks.get(formatTaskKey(inst.key))?.spec.queue !== undefined;
  }

  /** One pass of the checks. Passes do not overlap within one reconciler. */
  pass(): Promise<PassResult> {
    if (!this.running) {
      this.running = this.runPass().finally(() => {
        this.running = null;
      });
    }
    return this.running;
  }

  private readonly passListeners = new Set<(ms: number, result: PassResult) => void>();

  /** Hears each pass as it ends: how long it took (ms) and what it found. Returns how to stop. */
  onPass(listener: (ms: number, result: PassResult) => void): () => void {
    this.passListeners.add(listener);
    return () => this.passListeners.delete(listener);
  }

  private async runPass(): Promise<PassResult> {
    const started = performance.now();
    const result = await this.checkAndRepair();
    const ms = performance.now() - started;
    for (const l of this.passListeners) l(ms, result);
    return result;
  }

  private async checkAndRepair(): Promise<PassResult> {
    const { projection } = this.o;
    const now = this.now();
    const grace = this.o.confirmGraceMs ?? 2000;
    const unconfirmed: InstanceState[] = [];
    const expired: InstanceState[] = [];
    const stuck: Array<{ inst: InstanceState; events: DomainEvent[] }> = [];
    /** Tokens of the attempts queued or running: their leases are kept. */
    const live = new Set<string>();
    /** Dispatch times of attempts queued or running in the projection, looked after here or not. */
    const waiting = new Set<string>();
    const unheld: string[] = [];
    for (const inst of projection.instances.values()) {
      const a = currentAttempt(inst);
      if (a && (a.status === "queued" || a.status === "running") && this.dispatchedAt.has(a.token))
        waiting.add(a.token);
      if (!this.looksAfter(inst)) continue;
      const taskId = formatTaskKey(inst.key);
      const task = projection.tasks.get(taskId);
      if (needsScheduler(inst, task)) this.o.scheduler?.wake(taskId);
      const repair = decideStuckInstance(inst, task, this.o.actor);
      if (repair.length > 0) {
        stuck.push({ inst, events: repair });
        continue;
      }
      if (!a) continue;
      const mine = this.dispatchedAt.get(a.token);
      const foreign = mine === undefined && this.o.foreignIntentGraceMs !== undefined;
      const g = intentGrace(inst, {
        graceMs: foreign ? (this.o.foreignIntentGraceMs as number) : grace,
        dispatchedAt: mine,
        onQueue: task?.spec.queue !== undefined,
        listeningSince: this.listeningSince,
      });
      if (a.status === "queued" || a.status === "running") live.add(a.token);
      if (isUnconfirmed(inst, now, g.graceMs, g.since)) {
        // An intent a remote worker holds is leased while the worker is heard from (see
        // RemoteWorkers): in its hands, perhaps running, it is given up only once that runs out.
        if (!this.leased(a.token, now)) unconfirmed.push(inst);
      } else if (this.watchedElsewhere(a.workerId)) continue;
      else if (a.status === "running") {
        if (a.workerId && this.o.isRemoteWorker?.(a.workerId) && this.o.unheldRemote?.(a.token))
          unheld.push(a.token);
        if (this.leases.deadline(a.token, now, inst.leaseSeconds) < now) expired.push(inst);
      } else if (a.status === "lease_expired") expired.push(inst);
    }
    this.leases.retain(live);
    for (const run of projection.runs.values()) if (runNeedsRepair(run)) this.o.scheduler?.wakeRun(run.runId);
    // A dispatch time matters only while its attempt waits to be confirmed. Past its grace, an
    // attempt the projection holds queued or running nowhere (ended, its instance gone from the
    // projection) has no use for it: kept for ten graces, a settle of many tasks held every
    // token it dispatched in that time (100,000 of them at 5,000 a second). One whose instance
    // is not looked after here now (its shard elsewhere for a while) keeps it, as before. An
    // intent the projection shows only a grace after its dispatch loses its time, and is then
    // judged as one this process did not dispatch: from when it was recorded (past its grace
    // then, as it is from the dispatch, both a moment apart) or with another scheduler's longer
    // grace, never sooner than before.
    for (const [t, at] of this.dispatchedAt) {
      if (now - at > 10 * grace || (now - at > grace && !waiting.has(t))) this.dispatchedAt.delete(t);
    }

    const gone = this.o.isWorkerGone;
    const lost: InstanceState[] = [];
    if (gone) {
      for (const inst of projection.instances.values()) {
        if (!this.looksAfter(inst)) continue;
        const a = currentAttempt(inst);
        if (!a?.workerId) continue;
        const check = checkLostWorker(inst, {
          workerGone: gone(a.workerId),
          ownWorker: this.o.isOwnWorker?.(a.workerId) ?? true,
          leaseDeadline: this.leases.peek(a.token),
          now,
        });
        switch (check.kind) {
          case "not_lost":
            break;
          case "within_lease":
            this.leases.extend(a.token, check.leaseDeadline);
            break;
          case "lost":
            lost.push(inst);
            break;
          default: {
            const never: never = check;
            return never;
          }
        }
      }
    }
    const lostSet = new Set(lost);
    const checkLease = expired.filter((i) => !lostSet.has(i));
    const asked = [
      ...new Set([
        ...[...unconfirmed, ...checkLease, ...lost].map((i) => currentAttempt(i)?.token as string),
        ...unheld,
      ]),
    ];
    const known = asked.length > 0 ? await this.o.dispatcher.query(asked) : new Map<string, string>();
    for (const inst of [...unconfirmed, ...checkLease]) {
      const token = currentAttempt(inst)?.token;
      if (token && !known.has(token) && this.o.scheduler?.hasPendingReport(inst.stream))
        known.set(token, "report pending");
    }
    for (const inst of lost) {
      const decision = decideLostWorker(inst, known.has(currentAttempt(inst)?.token as string));
      switch (decision.kind) {
        case "report_interrupted":
          this.o.scheduler?.reportInterrupted(inst, decision.reason);
          break;
        case "leave":
          break;
        default: {
          const never: never = decision;
          return never;
        }
      }
    }
    // The workers' answers can take seconds: a lease renewed meanwhile (a heartbeat, or
    // anything its remote worker sent) has not run out, answer or not.
    const answeredAt = this.now();
    const writes: Array<Promise<boolean>> = [];
    for (const inst of unconfirmed) {
      if (this.leased(currentAttempt(inst)?.token as string, answeredAt)) continue;
      const events = decideUnconfirmedIntent(
        inst,
        known.has(currentAttempt(inst)?.token as string),
        this.o.actor,
      );
      if (events.length > 0) writes.push(this.write(inst, events, "unconfirmed intent"));
    }
    for (const inst of checkLease) {
      const token = currentAttempt(inst)?.token as string;
      if (this.leased(token, answeredAt)) continue;
      const decision = decideExpiredLease(inst, known.has(token), now, this.o.actor);
      switch (decision.kind) {
        case "renew":
          this.leases.extend(token, now + inst.leaseSeconds * 1000);
          break;
        case "write":
          writes.push(
            this.write(inst, decision.events, "lease expired", this.operatorAlert(inst, decision.events)),
          );
          break;
        case "wait":
          break;
        default: {
          const never: never = decision;
          return never;
        }
      }
    }
    for (const s of stuck) writes.push(this.write(s.inst, s.events, "stuck instance"));
    const results = await Promise.all(writes);
    const written = results.filter(Boolean).length;
    const conflicts = results.length - written;
    this.totals.passes += 1;
    this.totals.written += written;
    this.totals.conflicts += conflicts;
    return {
      unconfirmed: unconfirmed.length,
      expired: checkLease.length,
      stuck: stuck.length,
      lost: lost.length,
      written,
      conflicts,
    };
  }

  /** Whether the attempt's lease runs at `at` (renewed by its worker: see LeaseBook). */
  private leased(token: string, at: number): boolean {
    return (this.leases.peek(token) ?? Number.NEGATIVE_INFINITY) >= at;
  }

  /** Instances of the shards held here, and attempts on this process's own workers. */
  private looksAfter(inst: InstanceState): boolean {
    if (!this.o.scheduler || this.o.scheduler.ownsInstance(inst)) return true;
    const workerId = currentAttempt(inst)?.workerId;
    return !!workerId && !!this.o.isOwnWorker?.(workerId);
  }

  /** An attempt on a live worker of another scheduler: its supervisor and reconciler watch it. */
  private watchedElsewhere(workerId: string | null | undefined): boolean {
    if (!workerId || !this.o.isOwnWorker || this.o.isOwnWorker(workerId)) return false;
    // A remote worker's attempts are watched by the scheduler owning their shard: this one.
    if (this.o.isRemoteWorker?.(workerId)) return false;
    return !this.o.isWorkerGone?.(workerId);
  }

  /** Compare-and-set at the observed revision; false when someone else wrote first. */
  /** An attempt left waiting for an operator (not idempotent, its lease expired): alert, in the same append. */
  private operatorAlert(inst: InstanceState, events: readonly DomainEvent[]): StreamWrite[] {
    const expired = events.find((e) => e.type === "AttemptHeartbeatExpired");
    if (expired?.type !== "AttemptHeartbeatExpired" || events.some((e) => e.type === "AttemptAbandoned"))
      return [];
    return alertWrites(
      this.o.projection,
      "needs_operator",
      {
        task: inst.key,
        logicalDate: inst.logicalDate,
        reason: `attempt ${expired.data.attempt}'s lease expired and no worker knows it; the task is not idempotent, so it is not run again on its own: abandon it (chronolog attempt abandon, --retry to run it again) once you know whether it ran`,
      },
      expired.data.token,
    );
  }

  private async write(
    inst: InstanceState,
    events: DomainEvent[],
    check: string,
    alerts: readonly StreamWrite[] = [],
  ): Promise<boolean> {
    const outcome = await handleCommand(this.o.log, {
      name: `${check} on ${inst.stream}`,
      read: () => inst,
      decide: (i) => ({
        writes: [{ streamId: i.stream, events, expectedRevision: i.revision }, ...alerts],
        result: null,
      }),
    });
    if (outcome.kind === "conflict") return false;
    this.o.logger?.warn({ stream: inst.stream, check, events: events.map((e) => e.type) }, "reconciled");
    return true;
  }
}
