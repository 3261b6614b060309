import {
  type AttemptReportInput,
  type ChildStart,
  type ChildStarter,
  decideSuccessCommit,
  foldInstance,
  type InstanceState,
  type QueueRoom,
  type SchedulerProjection,
  type SuccessCommit,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import {
  type AppendResult,
  type EventLog,
  LogMovedError,
  type StreamWrite,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import type { AttemptReport } from "@chronolog/worker";
import type { QueueRooms } from "./admission/pass-slots.js";
import type { RunSlots } from "./admission/run-slots.js";
import type { Agenda } from "./agenda.js";
import { type AppendChain, followed } from "./append-chain.js";
import { type Command, type Decided, handleCommand } from "./command.js";
import type { InFlight } from "./inflight.js";
import { runCommand } from "./intent-writer.js";
import type { Outbox } from "./outbox.js";
import type { Ownership } from "./ownership.js";
import { renderCacheKey, renderEnvironment, renderPayload } from "./payload.js";
import type { LeaseBook } from "./reconcile/lease-book.js";
import type { SchedulerLogger } from "./scheduler-types.js";

/*
 * The shell of a worker's reports, a success's whole path in one place:
 *
 *   report -> read the attempt stream -> decideSuccessCommit (the core: the attempt's end, the
 *   interval's completion and the task's advance, each child's intent) -> one atomic append ->
 *   apply (leases, the children in flight) -> send (the children's attempts, the start
 *   permission of an attempt that waits for it).
 *
 * Reports that arrive in the same tick are grouped per attempt stream, and each group is one
 * command for the command handler; appends to different streams share one group commit.
 *
 * The children of a success are decided at a head of the log, and its append is made only if
 * the log is still there (`expectedHead`). Many successes share a group commit with the pass's
 * intents, so each is decided at the head that the appends of both queued before it will leave
 * (see AppendChain), not at the head last committed, which those appends move on.
 */

/** Times an append is decided again after a compare-and-set conflict on its attempt stream. */
const MAX_CONFLICT_RETRIES = 8;
/** Times the children of a success are decided again when the log moved on meanwhile. */
const MAX_MOVED_RETRIES = 2;

/** What the shell works with: the log, the scheduler's memory, and the way out to the workers. */
export interface SuccessCommitParts {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly runSlots: RunSlots;
  readonly inflight: InFlight;
  readonly leases: LeaseBook;
  readonly outbox: Outbox;
  readonly ownership: Ownership;
  /** Whether nothing new starts (`halted`: stopped, or draining for a shutdown). */
  readonly agenda: Pick<Agenda, "halted">;
  readonly now: () => number;
  readonly random: () => number;
  readonly newToken: () => string;
  readonly logger: SchedulerLogger;
  /** The remote workers' queues, when they are served: a child of one with room starts with its parent's success. */
  readonly queues?: QueueRooms;
  /** Where the appends this scheduler queued will leave the log (see AppendChain). */
  readonly chain: AppendChain;
}

/** Applies workers' reports: see the file's comment. */
export class SuccessCommits implements ChildStarter {
  /** Reports waiting for the next flush, per stream, with what their commit settles. */
  private pending = new Map<string, { reports: AttemptReport[]; settled: Settled }>();
  /** Streams with an append under way: their next reports wait for it. */
  private readonly busy = new Map<string, Promise<void>>();
  /** The state last written per stream, until the projection has caught up with it. */
  private readonly written = new Map<string, InstanceState>();
  private scheduled = false;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];

  /** ChildStarter's: the room of a queue's workers, when remote workers are served. */
  readonly queueRoom?: (queue: string) => QueueRoom;

  constructor(readonly parts: SuccessCommitParts) {
    const queues = parts.queues;
    if (queues) this.queueRoom = (queue) => queues.room(queue);
  }

  /**
   * Takes a report to be written with the others of its stream. Resolves once the commit that
   * holds it has settled: written (durable), or failed and logged; with the attempts it told to
   * stop (see ReportsSettled).
   */
  submit(report: AttemptReport): Promise<ReportsSettled> {
    let entry = this.pending.get(report.instanceStream);
    if (!entry) {
      entry = { reports: [], settled: settledPromise() };
      this.pending.set(report.instanceStream, entry);
    }
    entry.reports.push(report);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return entry.settled.promise;
  }

  /** Whether reports for the stream wait to be written (a worker spoke; the log has not heard yet). */
  hasPending(stream: string): boolean {
    return this.pending.has(stream) || this.busy.has(stream);
  }

  /** Resolves when every report submitted so far has been written (or rejected). */
  async idle(): Promise<void> {
    if (this.pending.size === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** The projection has applied `stream` up to `revision`: drop what it now knows better. */
  observed(stream: string, revision: bigint): void {
    const mine = this.written.get(stream);
    if (mine && mine.revision <= revision) this.written.delete(stream);
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = new Map();
    for (const [stream, { reports, settled }] of batch) {
      this.inFlight += 1;
      const previous = this.busy.get(stream) ?? Promise.resolve();
      let stopped = NOTHING_STOPPED;
      const run = previous
        .then(() => this.commit(stream, reports))
        .then(
          (s) => {
            stopped = s;
          },
          (error) => {
            // Not written: none of its reports holds (a start among them is no permission).
            stopped = new Set(reports.map((r) => r.token));
            this.parts.logger.error({ err: error, stream }, "could not apply a worker report");
          },
        )
        .finally(() => {
          settled.resolve({ stopped });
          if (this.busy.get(stream) === run) this.busy.delete(stream);
          this.inFlight -= 1;
          if (this.inFlight === 0 && this.pending.size === 0) {
            for (const w of this.idleWaiters.splice(0)) w();
          }
        });
      this.busy.set(stream, run);
    }
  }

  /**
   * Read, decide, append once (through the command handler), then apply and send. Reports
   * written as someone else (a remote worker's) are committed apart, each run as its own actor.
   */
  private async commit(stream: string, reports: readonly AttemptReport[]): Promise<ReadonlySet<string>> {
    const first = reports[0]?.actor;
    if (reports.some((r) => r.actor !== first)) {
      const stopped = new Set<string>();
      let from = 0;
      for (let i = 1; i <= reports.length; i++)
        if (i === reports.length || reports[i]?.actor !== reports[from]?.actor) {
          for (const t of await this.commit(stream, reports.slice(from, i))) stopped.add(t);
          from = i;
        }
      return stopped;
    }
    const log = first === undefined ? this.parts.log : this.parts.log.as(first);
    const command = new ReportCommand(this, stream, reports.map(toInput), log);
    const outcome = await handleCommand(log, command);
    if (outcome.kind === "conflict") throw outcome.error;
    const d = outcome.result;
    if (outcome.kind === "written") {
      const first = outcome.results[0] as AppendResult;
      if (d.after) this.written.set(stream, { ...d.after, revision: first.nextExpectedRevision });
      if (d.children.length > 0) this.started(d.children, outcome.results.slice(2));
    }
    this.apply(d);
    if (!d.answers.some((a) => a.answer === "stop")) return NOTHING_STOPPED;
    return new Set(d.answers.flatMap((a) => (a.answer === "stop" ? [a.token] : [])));
  }

  /** The children's intents are durable: in flight until the projection shows them, then to the workers. */
  private started(children: readonly ChildStart[], results: readonly AppendResult[]): void {
    const { inflight, outbox, projection } = this.parts;
    children.forEach((c, i) => {
      const r = results[i];
      if (r) inflight.at(c.task.id, r.position);
    });
    outbox.send(
      children.map((c) =>
        runCommand(c.task, c.attempt, c.token, c.operator, renderEnvironment(c.task, projection)),
      ),
    );
  }

  /** What the reports mean for the leases and the workers that sent them. */
  private apply(d: SuccessCommit): void {
    const { leases, outbox } = this.parts;
    for (const [token, until] of d.leases) leases.extend(token, until);
    for (const token of d.ended) leases.forget(token);
    for (const { token, answer } of d.answers)
      if (answer === "proceed") outbox.proceed(token);
      else outbox.stop(token, "the attempt is no longer current");
  }

  /** The newer of the projection's state and the one last written here. */
  latest(stream: string): InstanceState | undefined {
    const projected = this.parts.projection.instances.get(stream);
    const mine = this.written.get(stream);
    if (!mine) return projected;
    if (projected && projected.revision >= mine.revision) {
      this.written.delete(stream);
      return projected;
    }
    return mine;
  }

  /**
   * The log's head once the projection has applied everything up to it (the children are decided
   * on everything committed so far: this process's latest commits may not have reached the
   * projection yet), or null when it does not get there in a few turns, or nothing may start.
   */
  async caughtUpHead(): Promise<bigint | null> {
    const { log, projection } = this.parts;
    const head = await log.headPosition();
    for (let turns = 0; projection.position < head && turns < 3; turns++)
      await new Promise((resolve) => setImmediate(resolve));
    if (this.parts.agenda.halted || projection.position < head) return null;
    return projection.position;
  }

  /** The children are in flight, with their run slots held, while the append is made. */
  hold(children: readonly ChildStart[]): void {
    for (const c of children) {
      this.parts.inflight.pending(c.task.id);
      if (c.runId !== null) this.parts.runSlots.reserve(c.runId, c.task.id);
    }
  }

  /** The append with the children was refused: they are the pass's again. */
  release(children: readonly ChildStart[]): void {
    for (const c of children) {
      this.parts.inflight.clear(c.task.id);
      if (c.runId !== null) this.parts.runSlots.release(c.runId, c.task.id, true);
    }
  }

  // ---- ChildStarter: what the core asks of this scheduler to start a child with a success ----

  startable(child: TaskState): boolean {
    return this.parts.ownership.owns(child) && !this.parts.inflight.has(child.id);
  }

  runSlotsTaken(runId: string, except: string): number {
    return this.parts.runSlots.taken(runId, this.parts.projection.runs.get(runId), except);
  }

  waitsForRunSlot(workflow: string, logicalDate: string): boolean {
    const { projection, runSlots } = this.parts;
    return runSlots.waitsIn(logicalDate, (t) => projection.tasks.get(t)?.spec.workflow === workflow);
  }

  render(child: TaskState): ReturnType<ChildStarter["render"]> {
    const { projection } = this.parts;
    // The environment is made again when the child is sent (`started`): made here, a value that
    // cannot be given holds the child as a payload that does not render would.
    renderEnvironment(child, projection);
    return { operator: renderPayload(child, projection), cacheKey: renderCacheKey(child, projection) };
  }

  newToken(): string {
    return this.parts.newToken();
  }
}

/** The state a batch is decided on: the attempt stream as known. */
interface ReportState {
  readonly instance: InstanceState | undefined;
}

/**
 * One batch of reports for one attempt stream, as a command for the handler. Its conflict
 * policy: children refused (the log moved on since they were decided, a child's stream is not
 * where the projection said, a write the log does not take) are decided again at most twice
 * when the log only moved on, else dropped (the success is written without them and the pass
 * starts them); a task stream that moved drops the advance (the pass advances the task); a
 * conflict on the attempt stream reads it again and decides afresh.
 */
class ReportCommand implements Command<ReportState, SuccessCommit> {
  readonly maxRetries = MAX_CONFLICT_RETRIES + MAX_MOVED_RETRIES + 2;
  private advance = true;
  private withChildren: boolean;
  private moved = 0;
  private reread = false;
  private state: ReportState = { instance: undefined };
  /** The log position the children are decided at (none: no children this time). */
  private expectedHead: bigint | undefined;
  private decided: SuccessCommit | null = null;
  /** The children's task streams the last append checked (a conflict there drops the children). */
  private checked: ReadonlySet<string> = new Set();

  constructor(
    private readonly shell: SuccessCommits,
    private readonly stream: string,
    private readonly reports: readonly AttemptReportInput[],
    /** The log as the reports' actor writes it (the scheduler, or a remote worker). */
    private readonly log: EventLog,
  ) {
    this.withChildren = shell.parts.log.supportsExpectedHead;
  }

  get name(): string {
    return `report ${this.stream}`;
  }

  read(fresh: boolean): ReportState | Promise<ReportState> {
    if (!fresh || this.reread) {
      this.reread = false;
      const known = fresh ? undefined : this.shell.latest(this.stream);
      if (!known) return this.readLog();
      this.state = { instance: known };
    }
    return this.withHead();
  }

  private async readLog(): Promise<ReportState> {
    this.state = { instance: foldInstance(await this.shell.parts.log.readStream(this.stream)) };
    return this.withHead();
  }

  /** Where a success may start children, the head they are decided at. */
  private withHead(): ReportState | Promise<ReportState> {
    this.expectedHead = undefined;
    const inst = this.state.instance;
    // (The task's own next interval is decided with its children: a success without children
    // needs the head too.)
    if (!this.withChildren || !inst || !this.reports.some((r) => r.kind === "succeeded")) return this.state;
    // Decided after the appends queued here before it: at the head they leave (see Chain).
    const chained = this.shell.parts.chain.head;
    if (chained !== null && !this.shell.parts.agenda.halted) {
      this.expectedHead = chained;
      return this.state;
    }
    return this.shell.caughtUpHead().then((head) => {
      this.expectedHead = head ?? undefined;
      return this.state;
    });
  }

  decide(s: ReportState): Decided<SuccessCommit> {
    const { parts } = this.shell;
    const d = decideSuccessCommit(parts.projection, {
      stream: this.stream,
      instance: s.instance,
      reports: this.reports,
      now: parts.now(),
      random: parts.random(),
      advance: this.advance,
      children: this.expectedHead === undefined ? null : this.shell,
    });
    this.decided = d;
    return { writes: d.writes, result: d };
  }

  append(writes: readonly StreamWrite[]): Promise<readonly AppendResult[]> {
    const { log } = this;
    const { chain } = this.shell.parts;
    let events = 0;
    for (const w of writes) events += w.events.length;
    const children = this.decided?.children ?? [];
    if (children.length === 0) {
      const [only] = writes;
      const appended =
        writes.length === 1 && only
          ? log
              .append(only.streamId, only.events, { expectedRevision: only.expectedRevision })
              .then((r) => [r])
          : log.appendMany(writes);
      return followed(appended, chain.queued(null, events));
    }
    // Decided just now, on the projection and on what every append queued here before it holds:
    // made only at the head those leave, or (none known) at the head read with the projection.
    const head = chain.head ?? (this.expectedHead as bigint);
    this.shell.hold(children);
    // Each child also where it stood when decided: the head's position alone passes appends of
    // others that took the place of one of the chain's refused (an operator's backfill of the
    // child, the same number of events long).
    const written = new Set(writes.map((w) => w.streamId));
    const checks = children.flatMap((c) => {
      const streamId = taskStream(c.task.key);
      return written.has(streamId) ? [] : [{ streamId, expectedRevision: c.task.revision }];
    });
    this.checked = new Set(checks.map((c) => c.streamId));
    const appended = log.appendMany(writes, { expectedHead: head, checks });
    const done = chain.queued(head, events);
    // A child of a worker queue takes a slot the queue's room does not count until it is sent:
    // the successes after it read the head again (by then it is sent).
    if (children.some((c) => c.task.spec.queue !== undefined)) chain.end();
    return followed(appended, done).catch((error: unknown) => {
      this.shell.release(children);
      throw error;
    });
  }

  onConflict(error: WrongExpectedRevisionError, tries: number): "retry" | "give_up" {
    return this.afterRefusal(error, tries);
  }

  onRefused(error: unknown, tries: number): "retry" | "throw" {
    return this.afterRefusal(error, tries) === "retry" ? "retry" : "throw";
  }

  private afterRefusal(error: unknown, tries: number): "retry" | "give_up" {
    const d = this.decided;
    if (d && d.children.length > 0) {
      if (error instanceof LogMovedError && this.moved < MAX_MOVED_RETRIES) {
        // The log moved on after the children were decided (most often: another success in the
        // same group commit): they are decided again on what it holds now, so that they still
        // start in their parent's commit, before they are left to the pass.
        this.moved += 1;
        return "retry";
      }
      const conflict = error instanceof WrongExpectedRevisionError ? error : null;
      if (
        !conflict ||
        d.writes.slice(2).some((w) => w.streamId === conflict.streamId) ||
        this.checked.has(conflict.streamId)
      ) {
        this.withChildren = false;
        return "retry";
      }
    }
    if (!(error instanceof WrongExpectedRevisionError) || tries > MAX_CONFLICT_RETRIES) return "give_up";
    if (error.streamId !== this.stream) {
      // The task moved meanwhile: write the attempt alone; the pass advances the task.
      this.advance = false;
      this.withChildren = false;
      return "retry";
    }
    this.reread = true; // someone else wrote: read the stream again and decide afresh
    return "retry";
  }
}

function toInput(r: AttemptReport): AttemptReportInput {
  switch (r.kind) {
    case "started":
      return {
        kind: "started",
        token: r.token,
        attempt: r.attempt,
        workerId: r.workerId,
        pid: r.pid,
        ...(r.outputPath ? { outputPath: r.outputPath } : {}),
      };
    case "heartbeat":
      return { kind: "heartbeat", token: r.token, attempt: r.attempt, workerId: r.workerId };
    case "succeeded":
      return {
        kind: "succeeded",
        token: r.token,
        attempt: r.attempt,
        workerId: r.workerId,
        durationMs: r.durationMs,
        exitCode: r.exitCode,
        stdoutTail: r.stdoutTail,
        stderrTail: r.stderrTail,
        ...(r.outputFile ? { outputFile: r.outputFile } : {}),
      };
    case "failed":
      return {
        kind: "failed",
        token: r.token,
        attempt: r.attempt,
        workerId: r.workerId,
        durationMs: r.durationMs,
        exitCode: r.exitCode,
        stdoutTail: r.stdoutTail,
        stderrTail: r.stderrTail,
        error: r.error,
        ...(r.outputFile ? { outputFile: r.outputFile } : {}),
        ...(r.neverStarted ? { neverStarted: true } : {}),
      };
    default: {
      const never: never = r;
      return never;
    }
  }
}

/**
 * What a commit of reports settled to: the attempts whose reports it told to stop (refused as no
 * longer current, or ended), and every attempt of a commit that failed.
 */
export interface ReportsSettled {
  readonly stopped: ReadonlySet<string>;
}

/** What most commits settle to: no attempt told to stop. */
const NOTHING_STOPPED: ReadonlySet<string> = new Set();

interface Settled {
  readonly promise: Promise<ReportsSettled>;
  resolve(settled: ReportsSettled): void;
}

function settledPromise(): Settled {
  let resolve: (settled: ReportsSettled) => void = () => {};
  const promise = new Promise<ReportsSettled>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
