import {
  admitTask,
  claimOf,
  compareWaiters,
  type Hold,
  type InstanceState,
  instanceStream,
  type RunAdmission,
  type SchedulerProjection,
  type TaskDecision,
  type TaskState,
  unreachable,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import type { RunCommand } from "@chronolog/worker";
import type { Agenda } from "../agenda.js";
import { handleCommand } from "../command.js";
import type { InFlight } from "../inflight.js";
import { IntentCommand, type IntentOutcome, type IntentWriter } from "../intent-writer.js";
import type { Outbox } from "../outbox.js";
import type { RunKeeper } from "../run-keeper.js";
import type { SchedulerLogger } from "../scheduler-types.js";
import type { ConnectionSlots } from "./connection-slots.js";
import { PassSlots, type QueueRooms } from "./pass-slots.js";
import type { RunSlots } from "./run-slots.js";

/** A task the pass found free to start, before the limits are applied. */
export interface Free {
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

export interface AdmissionParts {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly connections: ConnectionSlots;
  readonly runSlots: RunSlots;
  readonly intents: IntentWriter;
  readonly runs: RunKeeper;
  readonly inflight: InFlight;
  readonly agenda: Agenda;
  readonly outbox: Outbox;
  /** The scheduler's counters: conflicts are counted here. */
  readonly stats: { conflicts: number };
  readonly logger: SchedulerLogger;
  readonly now: () => number;
  /** The remote workers' queues, when this scheduler serves any. */
  readonly queues?: QueueRooms;
}

/**
 * The tasks a pass found free to start: admitted to their limits in the order free slots are
 * given out, the runs they start started, their intents written durably, and their attempts
 * handed to the workers. A payload that does not render holds its task, said by renderProblem.
 */
export class Admissions {
  private readonly log: EventLog;
  private readonly projection: SchedulerProjection;
  private readonly connections: ConnectionSlots;
  private readonly runSlots: RunSlots;
  private readonly intents: IntentWriter;
  private readonly runs: RunKeeper;
  private readonly inflight: InFlight;
  private readonly agenda: Agenda;
  private readonly outbox: Outbox;
  private readonly stats: { conflicts: number };
  private readonly logger: SchedulerLogger;
  private readonly now: () => number;
  private readonly queues: QueueRooms | undefined;
  /** Tasks whose payload did not render, for which interval and declaration (they are held). */
  private readonly renderFailures = new Map<
    string,
    { logicalDate: string; revision: bigint; message: string }
  >();

  constructor(p: AdmissionParts) {
    this.log = p.log;
    this.projection = p.projection;
    this.connections = p.connections;
    this.runSlots = p.runSlots;
    this.intents = p.intents;
    this.runs = p.runs;
    this.inflight = p.inflight;
    this.agenda = p.agenda;
    this.outbox = p.outbox;
    this.stats = p.stats;
    this.logger = p.logger;
    this.now = p.now;
    this.queues = p.queues;
  }

  /** Why the task's payload did not render for its current interval and declaration, if it did not. */
  renderProblem(task: TaskState): string | undefined {
    if (this.renderFailures.size === 0) return undefined;
    const f = this.renderFailures.get(task.id);
    if (!f) return undefined;
    if (f.logicalDate === task.logicalDate && f.revision === task.revision) return f.message;
    this.renderFailures.delete(task.id);
    return undefined;
  }

  /**
   * Admits the free tasks to their limits with the core's `admitTask`, one after another on the
   * slots the ones before left: the highest claim first (its priority; a backfill's intervals
   * after the schedule's), then the oldest interval and, within one, the task that has waited
   * longest for a slot. Starts the runs they start, then writes their intents.
   */
  async dispatchAll(free: readonly Free[]): Promise<void> {
    const slots = new PassSlots(this.projection, this.connections, this.runSlots, this.queues);
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
      this.agenda.wakeAt(c.task.id, this.now() + 1000);
      return false;
    });
    const commands = await Promise.all(going.map((c) => this.dispatchOne(c)));
    this.outbox.send(commands.filter((c): c is RunCommand => c !== null));
  }

  private inOrder(free: readonly Free[]): readonly Free[] {
    if (free.length < 2 || (!this.runSlots.anyWaiting && !free.some(competes))) return free;
    const weights = this.projection.weights;
    return free
      .map((c, i) => ({
        c,
        i,
        claim: claimOf(c.task, weights),
        logicalDate: c.task.logicalDate,
        since: this.runSlots.waitingSince(c.task.id, c.task.logicalDate),
        id: c.task.id,
      }))
      .sort((a, b) => compareWaiters(a, b) || a.i - b.i)
      .map((x) => x.c);
  }

  /** A task held by a limit waits for it to free a slot. */
  private hold(task: TaskState, h: Hold): void {
    switch (h.on) {
      case "connection":
      case "connection_undeclared":
        // (An undeclared connection's declaration, perhaps later in the same file, wakes it.)
        this.agenda.waitOn(h.connection, task.id);
        // It had a slot in its run: it no longer waits for one.
        this.runSlots.stopWaiting(task.id);
        return;
      case "run_slots":
        this.agenda.waitOn(`run:${h.runId}`, task.id);
        this.runSlots.wait(task.id, task.logicalDate);
        return;
      case "active_runs":
        this.agenda.waitOn(`run:${h.workflow}`, task.id);
        return;
      case "queue":
        // A worker connecting, or an attempt of the queue ending, wakes it.
        this.agenda.waitOn(`queue:${h.queue}`, task.id);
        this.runSlots.stopWaiting(task.id);
        return;
      case "run_failed_fast":
      case "earlier_attempt":
      case "render_failed":
      case "outside_report":
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
          this.logger.error({ task: task.id, err: o.error }, "payload render failed; the task is held");
          return null;
        case "look_again":
          // Decided elsewhere: decide again once this scheduler has seen as far as the log it read.
          this.inflight.at(task.id, o.until);
          this.agenda.wakeAt(task.id, this.now() + 1);
          return null;
        case "slot_conflict":
          this.inflight.clear(task.id);
          this.stats.conflicts += 1;
          if (o.seenAfter && conn) {
            this.agenda.waitOn(conn, task.id);
            waitsForSlot = true;
          } else this.agenda.wake(task.id);
          return null;
        case "in_flight":
        case "conflict":
          this.inflight.clear(task.id);
          this.stats.conflicts += 1;
          this.agenda.wake(task.id);
          return null;
        default:
          return unreachable(o);
      }
    } catch (error) {
      this.inflight.clear(task.id);
      this.logger.error({ err: error, task: task.id }, "could not write the dispatch intent");
      this.agenda.wakeAt(task.id, this.now() + 1000); // try again
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
}

/**
 * Whether the order of a pass's free tasks can matter for this one although no task waits for a
 * run's slot yet: it uses a connection, or claims other than the default (a priority, a
 * downstream weight, a backfill's interval), whose slots the first admitted take.
 */
function competes(c: Free): boolean {
  const { spec, backfill } = c.task;
  return (
    spec.connection !== undefined ||
    spec.priority !== undefined ||
    spec.priorityRule !== undefined ||
    backfill?.backfillId !== undefined
  );
}
