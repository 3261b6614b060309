import {
  answerHeldAttempt,
  type QueueRoom,
  type RefusalBudget,
  type SchedulerProjection,
  workerStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import {
  type AttemptReport,
  INLINE_OUTPUT_MAX,
  MAX_OUTPUT_CHUNK,
  MAX_REPORT_BATCH,
  REMOTE_PROTOCOL_VERSION,
  type RefusedReport,
  type RegisterAnswer,
  type RegisterRequest,
  type ReportsAnswer,
  type RunCommand,
  type WorkerCommand,
  type WorkerReport,
} from "@chronolog/worker";
import type { QueueRooms } from "../admission/pass-slots.js";
import type { Dispatcher, ReportListener } from "../dispatcher.js";
import type { LeaseBook } from "../reconcile/lease-book.js";
import type { SchedulerLogger } from "../scheduler-types.js";
import { Backlog } from "./backlog.js";
import type { CommandSink, RemoteConnection } from "./connection.js";
import { OutputSink } from "./output-sink.js";
import { Questions } from "./questions.js";
import { RemoteRefusal } from "./refusal.js";
import { RefusalRecord } from "./refusal-record.js";
import {
  adoptable,
  checkRegistration,
  connectedData,
  isWorkersOwn,
  newConnection,
  type WorkerCaller,
} from "./registration.js";
import { RemoteLeases } from "./remote-leases.js";
import {
  ConnectedFile,
  cancelled,
  closeGoneRegistrations,
  closeLeftConnections,
  currentTokens,
  heldAnswer,
  pruneEnded,
  settleReport,
  staleReport,
  unstartedEnds,
} from "./worker-records.js";

export interface RemoteWorkersOptions {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly logger: SchedulerLogger;
  /** This scheduler, as WorkerConnected records it. */
  readonly schedulerId: string;
  /** Where attempts' output files are kept (`<dataDir>/output`). */
  readonly outputRoot: string;
  readonly outputMaxBytes: number;
  /** Where the ids of the workers connected here are kept, for the next process to close (see settleAtStart). */
  readonly stateFile?: string;
  /** Most commands waiting for one worker's stream before it is dropped (default 10,000). */
  readonly bufferMax?: number;
  /** How often a worker posts, at least (default 5 s); silent four times as long, it is dropped. */
  readonly keepaliveMs?: number;
  /** How long `query` waits for the workers (default 2000 ms). */
  readonly queryTimeoutMs?: number;
  /** How many of a worker's refused reports are recorded one by one (default 20 a minute). */
  readonly refusalBudget?: RefusalBudget;
  /**
   * The leases of running attempts (the scheduler's, which the reconcile loop reads): whatever
   * a worker sends on its session renews the leases of the attempts it holds here (see RemoteLeases).
   */
  readonly leases?: LeaseBook;
  readonly now?: () => number;
}

/**
 * The scheduler's side of remote workers: their registrations, the attempts of each queue given
 * to the least loaded worker serving it that has a free slot (held here while none has), their
 * command streams (bounded: a worker that falls behind is dropped), their reports checked
 * (refused and recorded unless the attempt was given to that worker and is still current), and
 * their attempts' output kept where a local attempt's would be. A dropped worker's attempts are
 * left to the reconcile loop, as a lost worker's: its lease runs out unless it comes back and
 * announces them first.
 */
export class RemoteWorkers implements Dispatcher, QueueRooms {
  private readonly conns = new Map<string, RemoteConnection>();
  /** token -> the worker it was given to. */
  private readonly owner = new Map<string, RemoteConnection>();
  /** Attempts waiting for a free slot on one of their queue's workers. */
  private readonly backlog = new Backlog();
  private readonly reportListeners = new Set<ReportListener>();
  private readonly roomListeners = new Set<(queue: string) => void>();
  private readonly questions = new Questions();
  /** worker id -> its registration being taken now (they are taken one at a time). */
  private readonly registering = new Map<string, Promise<void>>();
  private readonly output: OutputSink;
  private readonly now: () => number;
  /**
   * The clock the command batches and the answers carry (see CommandsEvent's `at`): the
   * process's monotonic clock from its start, in whole epoch ms, so that a step of the wall clock
   * between two answers does not make a command look sooner or later than it was.
   */
  private readonly stamp: () => number;
  private readonly keepaliveMs: number;
  private readonly bufferMax: number;
  private readonly timer: NodeJS.Timeout;
  private flushScheduled = false;
  private readonly connectedFile: ConnectedFile | undefined;
  private readonly refusals: RefusalRecord;
  /** The leases of the attempts given or adopted here (see RemoteLeases). */
  private readonly leases: RemoteLeases;
  /** Registrations of gone schedulers recorded gone here, or being recorded now. */
  private readonly closing = new Set<string>();
  private closed = false;

  constructor(private readonly o: RemoteWorkersOptions) {
    this.now = o.now ?? Date.now;
    this.stamp = o.now ?? (() => Math.floor(performance.timeOrigin + performance.now()));
    this.keepaliveMs = o.keepaliveMs ?? 5000;
    this.bufferMax = o.bufferMax ?? 10_000;
    this.output = new OutputSink(o.outputRoot, o.outputMaxBytes);
    this.connectedFile = o.stateFile ? new ConnectedFile(o.stateFile) : undefined;
    this.refusals = new RefusalRecord(o.log, o.logger, this.now, o.refusalBudget);
    this.leases = new RemoteLeases(o.leases, o.projection, this.now);
    this.timer = setInterval(() => this.tick(), this.keepaliveMs);
    this.timer.unref();
  }

  /** How long a worker may be silent before it is dropped. */
  get silenceMs(): number {
    return this.keepaliveMs * 4;
  }

  /** Workers connected now. */
  get connected(): number {
    return this.conns.size;
  }

  /**
   * At start: every worker an earlier process of this scheduler left recorded as connected is
   * recorded gone (`scheduler restarted`); it reconnects, announcing what it still runs.
   */
  async settleAtStart(): Promise<number> {
    const n = await closeLeftConnections(this.o.log, this.connectedFile?.read() ?? [], this.o.schedulerId);
    this.writeState();
    return n;
  }

  // ---- registration ---------------------------------------------------------------------

  /**
   * Registers a worker. Registrations of one id are taken one at a time: each is checked
   * against the one before it (its connection here, the token its id is bound to).
   */
  async register(req: RegisterRequest, caller: WorkerCaller): Promise<RegisterAnswer> {
    const before = this.registering.get(req.id);
    const mine = (before ?? Promise.resolve()).then(() => this.registerNow(req, caller));
    const settled = mine.then(
      () => {},
      () => {},
    );
    this.registering.set(req.id, settled);
    try {
      return await mine;
    } finally {
      if (this.registering.get(req.id) === settled) this.registering.delete(req.id);
    }
  }

  private async registerNow(req: RegisterRequest, caller: WorkerCaller): Promise<RegisterAnswer> {
    if (this.closed) throw new RemoteRefusal(503, "unavailable", "this scheduler is shutting down");
    const queues = checkRegistration(req, caller, this.conns, this.o.projection.workers.boundTo(req.id));
    const previous = this.conns.get(req.id);
    if (previous) await this.drop(previous, `replaced by a new connection from ${req.host}`);
    const adopted = adoptable(this.o.projection, req, queues, (t) => this.owner.has(t));
    // Leased from now, not once the appends below are made: the worker's fence counts from
    // having sent this registration, and a lease running out meanwhile would be retried.
    for (const t of adopted) this.leases.renew(t);
    const kept = new Set(adopted);
    const stop = req.running.filter((t) => !kept.has(t));
    // On record before the worker is sent anything.
    await this.o.log.append(
      workerStream(req.id),
      [{ type: "WorkerConnected", data: connectedData(req, caller, queues, adopted, this.o.schedulerId) }],
      { expectedRevision: "any" },
    );
    const conn = newConnection(req, caller, queues, this.stamp(), this.now());
    for (const t of adopted) {
      this.take(conn, t, null);
      // Its start durable, it may run: an attempt that waits for its start permission (not
      // idempotent) would otherwise wait for a proceed that went with the earlier process.
      if (heldAnswer(this.o.projection, t) === "proceed") conn.outbox.push({ kind: "proceed", token: t });
    }
    this.conns.set(conn.id, conn);
    this.writeState();
    this.o.logger.info(
      { worker: conn.id, host: conn.host, queues, capacity: conn.capacity, adopted: adopted.length },
      "remote worker connected",
    );
    for (const q of queues) this.drainBacklog(q);
    this.changed(conn.queues);
    return {
      protocol: REMOTE_PROTOCOL_VERSION,
      session: conn.session,
      actor: conn.actor,
      adopted,
      stop,
      keepaliveMs: this.keepaliveMs,
      silenceMs: this.silenceMs,
      outputMaxBytes: this.o.outputMaxBytes,
      maxOutputChunk: MAX_OUTPUT_CHUNK,
      maxReportBatch: MAX_REPORT_BATCH,
      inlineOutputMax: INLINE_OUTPUT_MAX,
      now: this.stamp(),
    };
  }

  /** The registration `session` of worker `id`, or a refusal. */
  connection(id: string, session: string | undefined): RemoteConnection {
    const conn = this.conns.get(id);
    if (!conn || conn.session !== session)
      throw new RemoteRefusal(
        409,
        "not_registered",
        `worker ${id} is not registered here with this session: register again (POST /api/v1/workers)`,
      );
    this.leases.heard(conn);
    return conn;
  }

  /** `conn` holds attempt `token` from now (given, or adopted: `cmd` null), leased from now. */
  private take(conn: RemoteConnection, token: string, cmd: RunCommand | null): void {
    conn.given.set(token, cmd);
    this.owner.set(token, conn);
    this.leases.took(conn, token, cmd);
  }

  /** The worker's command stream opened: commands go to it from now on. Returns what to call when it closes. */
  attach(conn: RemoteConnection, sink: CommandSink): () => void {
    conn.sink?.close("replaced by a new command stream");
    conn.sink = sink;
    this.scheduleFlush();
    return () => {
      if (conn.sink === sink && !conn.gone) void this.drop(conn, "link broken: its command stream closed");
    };
  }

  /** A token was revoked: the workers registered with it are dropped. */
  dropToken(name: string): void {
    for (const c of [...this.conns.values()])
      if (c.tokenName === name) void this.drop(c, `its token ${name} was revoked`);
  }

  /** The worker said goodbye: what it never started runs again at once (see unstartedEnds). */
  async goodbye(conn: RemoteConnection): Promise<void> {
    const ends = unstartedEnds(this.o.projection, conn, this.now());
    await this.drop(conn, "goodbye: the worker stopped");
    await Promise.all(ends.flatMap((r) => this.emit(r)));
  }

  // ---- reports and output --------------------------------------------------------------

  /**
   * A batch of the worker's reports: each applied if its attempt was given to it and is current.
   * Resolves (the worker is answered, and forgets them) once the reports are written: answered
   * before, a report the log then lost in a crash would be lost for good (the worker no longer
   * holds it), and an attempt that ended would be taken for lost and run again.
   */
  async receive(conn: RemoteConnection, messages: readonly WorkerReport[]): Promise<ReportsAnswer> {
    let accepted = 0;
    const refused: RefusedReport[] = [];
    const written: Promise<unknown>[] = [];
    /** The starts accepted here: token -> where their commits' settles begin and end in `written`. */
    const starts: Array<{ token: string; from: number; to: number }> = [];
    const freed = new Set<string>();
    for (const r of messages) {
      if (r.kind === "known") {
        // Adopted even when the question timed out: the worker sends their reports here now.
        this.adopt(conn, r.running);
        this.questions.answer(conn, r.requestId, r.running);
        accepted += 1;
        continue;
      }
      if (r.kind === "ready") continue;
      const why = this.refusal(conn, r);
      if (why) {
        refused.push({ kind: r.kind, token: r.token, reason: why });
        // Still running (or waiting for its start permission) on the worker, an attempt the log
        // has replaced or ended: it stops rather than hold a slot (or wait) forever.
        if ((r.kind === "started" || r.kind === "heartbeat") && this.outdated(r))
          this.enqueue(conn, { kind: "cancel", token: r.token, reason: "the attempt is no longer current" });
        continue;
      }
      if ((r.kind === "succeeded" || r.kind === "failed") && r.outputRest)
        this.output.writeRest(r.token, r.outputRest.offset, Buffer.from(r.outputRest.data, "base64"));
      const report = settleReport(conn, r, this.output);
      if (report.kind === "succeeded" || report.kind === "failed") {
        conn.given.delete(report.token);
        conn.spokenOf.delete(report.token);
        if (this.owner.get(report.token) === conn) this.owner.delete(report.token);
        for (const q of conn.queues) freed.add(q);
      } else this.leases.spokeOf(conn, report.token);
      accepted += 1;
      const from = written.length;
      written.push(...this.emit(report));
      if (report.kind === "started") starts.push({ token: report.token, from, to: written.length });
    }
    if (refused.length > 0) await this.refusals.refused(conn.id, messages, refused);
    for (const q of freed) this.drainBacklog(q);
    if (freed.size > 0) this.changed(freed);
    const settled = written.length > 0 ? await Promise.all(written) : [];
    // A start its commit refused after all (the projection had not yet shown the attempt given
    // up, or the reconcile loop's write came first), or did not write, is refused in the answer
    // too: a worker holding a late run for its start's answer runs it only on an acceptance.
    for (const s of starts) {
      if (!settled.slice(s.from, s.to).some((r) => stoppedIn(r, s.token))) continue;
      accepted -= 1;
      refused.push({ kind: "started", token: s.token, reason: "the attempt is no longer current" });
    }
    return { accepted, refused, now: this.stamp() };
  }

  /** A chunk of an attempt's output, at `offset`; returns the size kept so far. */
  writeOutput(conn: RemoteConnection, token: string, offset: number, chunk: Uint8Array): number {
    if (!conn.given.has(token))
      throw new RemoteRefusal(
        409,
        "not_dispatched",
        `attempt ${token} was not dispatched to worker ${conn.id}`,
      );
    return this.output.write(token, offset, chunk);
  }

  /** Whether the log has the report's attempt replaced or ended (not merely unknown here). */
  private outdated(r: AttemptReport): boolean {
    return answerHeldAttempt(this.o.projection.instances.get(r.instanceStream), r.token) === "stop";
  }

  /** Why a report is refused, or undefined when it may be applied. */
  private refusal(conn: RemoteConnection, r: AttemptReport): string | undefined {
    if (!conn.given.has(r.token)) return `attempt ${r.token} was not dispatched to worker ${conn.id}`;
    return staleReport(this.o.projection, r);
  }

  // ---- Dispatcher ------------------------------------------------------------------------

  dispatch(commands: readonly RunCommand[]): void {
    for (const cmd of commands) {
      const queue = cmd.queue;
      if (queue === undefined)
        throw new Error(`attempt ${cmd.token} has no queue: it is not a remote worker's`);
      const given = this.owner.get(cmd.token);
      if (given && !given.gone) {
        this.enqueue(given, cmd);
        continue;
      }
      const best = this.leastLoaded(queue);
      if (!best) {
        this.backlog.push(queue, cmd);
        continue;
      }
      this.give(best, cmd);
    }
  }

  onReport(listener: ReportListener): () => void {
    this.reportListeners.add(listener);
    return () => this.reportListeners.delete(listener);
  }

  query(tokens: readonly string[], timeoutMs = this.o.queryTimeoutMs ?? 2000): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    // Attempts held here for a free slot are known: they are on their way to a worker.
    for (const t of tokens) {
      const queue = this.backlog.queueOf(t);
      if (queue !== undefined) found.set(t, `queue ${queue}`);
    }
    const live = [...this.conns.values()].filter((c) => c.sink !== null);
    if (live.length === 0 || tokens.length === 0) return Promise.resolve(found);
    return this.questions.ask(live, found, timeoutMs, (c, requestId) =>
      this.enqueue(c, { kind: "query", requestId, tokens: [...tokens] }),
    );
  }

  cancel(token: string, reason: string): boolean {
    const conn = this.owner.get(token);
    if (conn && !conn.gone) {
      this.enqueue(conn, { kind: "cancel", token, reason });
      return true;
    }
    const cmd = this.backlog.remove(token);
    if (!cmd) return false;
    this.emit(cancelled(cmd, reason, this.now()));
    return true;
  }

  proceed(token: string): boolean {
    const conn = this.owner.get(token);
    if (!conn || conn.gone) return false;
    this.enqueue(conn, { kind: "proceed", token });
    return true;
  }

  killAll(reason: string): number {
    let n = this.backlog.total;
    this.backlog.clear();
    for (const conn of this.conns.values())
      for (const token of conn.given.keys()) {
        this.enqueue(conn, { kind: "cancel", token, reason });
        n += 1;
      }
    return n;
  }

  // ---- QueueRooms ------------------------------------------------------------------------

  room(queue: string): QueueRoom {
    let connected = 0;
    let busy = this.backlog.size(queue);
    let slots = 0;
    for (const c of this.conns.values()) {
      if (!c.queues.has(queue)) continue;
      connected += 1;
      busy += c.given.size;
      slots += c.capacity;
    }
    return { connected, busy, slots };
  }

  onChange(listener: (queue: string) => void): () => void {
    this.roomListeners.add(listener);
    return () => this.roomListeners.delete(listener);
  }

  /** Drops every worker (`scheduler shutting down`): they reconnect to the next process. */
  async close(reason = "scheduler shutting down"): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.conns.values()].map((c) => this.drop(c, reason)));
  }

  // ---- inside ----------------------------------------------------------------------------

  /** The least loaded worker serving the queue with a free slot, if any. */
  private leastLoaded(queue: string): RemoteConnection | undefined {
    let best: RemoteConnection | undefined;
    let score = Number.POSITIVE_INFINITY;
    for (const c of this.conns.values()) {
      if (c.gone || !c.queues.has(queue) || c.given.size >= c.capacity) continue;
      const s = c.given.size / c.capacity;
      if (s < score) {
        best = c;
        score = s;
      }
    }
    return best;
  }

  private give(conn: RemoteConnection, cmd: RunCommand): void {
    this.take(conn, cmd.token, cmd);
    this.enqueue(conn, cmd);
  }

  private drainBacklog(queue: string): void {
    this.backlog.drain(queue, (cmd) => {
      // Ended or replaced while it waited (abandoned and retried by an operator, or by the
      // scheduler that owns its shard now): given now, it would run beside its retry.
      if (answerHeldAttempt(this.o.projection.instances.get(cmd.instanceStream), cmd.token) === "stop")
        return true;
      const best = this.leastLoaded(queue);
      if (best) this.give(best, cmd);
      return best !== undefined;
    });
  }

  private enqueue(conn: RemoteConnection, cmd: WorkerCommand): void {
    if (conn.gone) return;
    if (conn.outbox.length === 0) conn.outboxSince = this.stamp();
    conn.outbox.push(cmd);
    if (conn.outbox.length > this.bufferMax) {
      void this.drop(
        conn,
        `fell behind: ${conn.outbox.length} commands waiting to be sent, more than the ${this.bufferMax} a worker may`,
      );
      return;
    }
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    // At the end of the current turn (the commands given in it go in one batch), not after the
    // turn's I/O: a dispatch waited 5 to 18 ms for its stream behind other work that way.
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => {
      this.flushScheduled = false;
      for (const c of this.conns.values()) this.flushOne(c);
    });
  }

  private flushOne(conn: RemoteConnection): void {
    const sink = conn.sink;
    if (!sink || conn.gone || conn.writing || conn.outbox.length === 0) return;
    const messages = conn.outbox;
    conn.outbox = [];
    conn.writing = true;
    sink.send({ messages, at: conn.outboxSince }).then(
      () => {
        conn.writing = false;
        this.flushOne(conn);
      },
      (error: unknown) => {
        conn.writing = false;
        void this.drop(conn, `link broken: ${(error as Error)?.message ?? error}`);
      },
    );
  }

  /** Keepalives on every stream; a worker silent too long is dropped. */
  private tick(): void {
    const now = this.now();
    this.prune();
    void this.refusals.settle();
    for (const c of [...this.conns.values()]) {
      if (now - c.lastHeard > this.silenceMs) {
        void this.drop(
          c,
          `heartbeats stopped: nothing heard for ${Math.round((now - c.lastHeard) / 1000)} s`,
        );
        continue;
      }
      c.sink
        ?.ping()
        .catch((error: unknown) => void this.drop(c, `link broken: ${(error as Error)?.message}`));
    }
  }

  /**
   * Attempts ended in the log that a connection still counts (one adopted here whose worker
   * reported its end to another scheduler, which applied it): they free its slots.
   */
  private prune(): void {
    const freed = pruneEnded(this.o.projection, this.conns.values(), this.owner);
    for (const q of freed) this.drainBacklog(q);
    if (freed.size > 0) this.changed(freed);
  }

  private async drop(conn: RemoteConnection, reason: string): Promise<void> {
    if (conn.gone) return;
    conn.gone = true;
    conn.outbox = [];
    if (this.conns.get(conn.id) === conn) this.conns.delete(conn.id);
    for (const t of conn.given.keys()) if (this.owner.get(t) === conn) this.owner.delete(t);
    this.questions.gone(conn.id);
    conn.sink?.close(reason);
    this.o.logger.warn({ worker: conn.id, attempts: conn.given.size, reason }, "remote worker disconnected");
    this.writeState();
    this.changed(conn.queues);
    try {
      await this.o.log.append(
        workerStream(conn.id),
        [
          {
            type: "WorkerDisconnected",
            data: { worker: conn.id, reason: reason.slice(0, 2000), scheduler: this.o.schedulerId },
          },
        ],
        { expectedRevision: "any" },
      );
    } catch (error) {
      this.o.logger.error(
        { err: error, worker: conn.id },
        "could not record a remote worker's disconnection",
      );
    }
    await this.refusals.settle(conn.id);
  }

  /**
   * The worker knows these attempts: those current in the log, of its queues, that no live
   * connection here holds become its own (a scheduler that died gave them, or this one before a restart; the
   * reconcile loop asks about them once their shard is this scheduler's).
   */
  private adopt(conn: RemoteConnection, tokens: readonly string[]): void {
    const current = currentTokens(this.o.projection, tokens);
    let n = 0;
    for (const t of tokens) {
      const held = this.owner.get(t);
      if (!current.has(t) || (held && !held.gone)) continue;
      if (!isWorkersOwn(this.o.projection, t, (q) => conn.queues.has(q), conn.id)) continue;
      this.take(conn, t, null);
      n += 1;
      // Its start written by the scheduler that gave it (which died, or lost its shard, before
      // the permission went out): it may run now.
      if (heldAnswer(this.o.projection, t) === "proceed") this.enqueue(conn, { kind: "proceed", token: t });
    }
    if (n > 0)
      this.o.logger.info({ worker: conn.id, adopted: n }, "adopted running attempts of a remote worker");
  }

  /** Whether a connected worker holds the attempt `token` here (or it waits here for a slot). */
  holds(token: string): boolean {
    const c = this.owner.get(token);
    return (c !== undefined && !c.gone) || this.backlog.queueOf(token) !== undefined;
  }

  /** Records gone the registrations of schedulers now gone (see closeGoneRegistrations). */
  closeGoneSchedulers(isGone: (schedulerId: string) => boolean, graceMs: number): Promise<number> {
    const notBefore = this.now() - graceMs;
    return closeGoneRegistrations(
      this.o.log,
      this.o.projection,
      this.o.schedulerId,
      isGone,
      this.closing,
      notBefore,
    );
  }

  /** Hands a report to the listeners; returns what settles once they have written it. */
  private emit(report: WorkerReport): Promise<unknown>[] {
    const written: Promise<unknown>[] = [];
    for (const l of this.reportListeners) {
      try {
        const w = l(report);
        if (w instanceof Promise) written.push(w);
      } catch (error) {
        this.o.logger.error({ err: error }, "a remote worker report listener threw");
      }
    }
    return written;
  }

  private changed(queues: Iterable<string>): void {
    for (const q of queues) for (const l of this.roomListeners) l(q);
  }

  private writeState(): void {
    try {
      this.connectedFile?.write([...this.conns.keys()]);
    } catch (error) {
      this.o.logger.error({ err: error }, "could not keep the list of connected remote workers");
    }
  }
}

/** Whether what a report listener settled to (see ReportsSettled) told the attempt to stop. */
function stoppedIn(settled: unknown, token: string): boolean {
  const stopped = (settled as { stopped?: unknown } | null)?.stopped;
  return stopped instanceof Set && stopped.has(token);
}
