import type { DomainEvent } from "../events/catalog.js";
import type { QueueLoad } from "../task/queue-wait.js";

/** Workers that went away, remembered with why (the most recent first out). */
export const RECENT_DISCONNECTED_WORKERS = 100;

/** One attempt in flight that the workers projection follows: of a task with a queue, or on a remote worker. */
export interface WorkerAttempt {
  readonly token: string;
  /** Its attempt stream. */
  readonly stream: string;
  /** The task's id (`project/account/name/partition`). */
  readonly task: string;
  readonly logicalDate: string;
  readonly attempt: number;
  /** The queue of its task when it was dispatched (absent: the scheduler's own pool). */
  readonly queue?: string;
  /** The remote worker that started it (absent: not started yet, or not on a remote worker). */
  readonly worker?: string;
  readonly intendedAt: string;
  readonly startedAt?: string;
}

/** A remote worker as its last WorkerConnected registered it. */
export interface WorkerRecord {
  readonly id: string;
  readonly host: string;
  readonly queues: readonly string[];
  readonly capacity: number;
  readonly version: string;
  /** The scheduler it connected to. */
  readonly scheduler?: string;
  /** The name of the token it connected with. */
  readonly token?: string;
  /** When it connected (the WorkerConnected's record time). */
  readonly since: string;
}

/** A worker that went away, and why. */
export interface DisconnectedWorker extends WorkerRecord {
  readonly until: string;
  readonly reason: string;
}

/** A connected worker and the attempts it runs now (started on it and not ended). */
export interface ConnectedWorkerView extends WorkerRecord {
  /**
   * The last time the log heard of it: its connection, or the latest start, lease renewal
   * (heartbeat) or report of the end of an attempt it ran.
   */
  readonly lastHeard: string;
  readonly running: readonly WorkerAttempt[];
}

/** The workers projection as a snapshot holds it. */
export interface WorkersSnapshot {
  readonly connected: ReadonlyArray<WorkerRecord & { readonly lastHeard?: string }>;
  readonly disconnected: readonly DisconnectedWorker[];
  readonly attempts: readonly WorkerAttempt[];
  /** Each worker id bound to a token (see boundTo); absent in snapshots taken before. */
  readonly bound?: ReadonlyArray<{ readonly worker: string; readonly token?: string }>;
}

/** The token a worker id is bound to (`token` absent: one registered with no token). */
export interface WorkerBinding {
  readonly token?: string;
}

/** The event fields the fold reads: any recorded event has them. */
interface Recorded {
  readonly streamId: string;
  readonly metadata: { readonly recordedAt: string };
}

/**
 * Remote workers, from the log: those connected (`WorkerConnected`, not yet `WorkerDisconnected`),
 * those gone recently with why, and the attempts each runs now. Folded beside the scheduler
 * projection: worker events are rare and cost what they cost; an attempt event costs a look-up
 * or two in maps, and nothing at all for a task with no queue on the scheduler's own pool.
 * A pure fold: the same events in the same order give the same state.
 */
export class WorkersProjection {
  private readonly live = new Map<string, WorkerRecord>();
  /** connected worker id -> its registration with each scheduler it is connected to (by scheduler id). */
  private readonly links = new Map<string, Map<string, WorkerRecord>>();
  /** connected worker id -> when the log last heard of it. */
  private readonly heard = new Map<string, string>();
  /** worker id -> tokens of the attempts started on it and not ended. */
  private readonly runs = new Map<string, Set<string>>();
  /** Oldest first; at most RECENT_DISCONNECTED_WORKERS. */
  private readonly gone: DisconnectedWorker[] = [];
  /** token -> attempt, for every attempt in flight of a task with a queue or on a remote worker. */
  private readonly attempts = new Map<string, WorkerAttempt>();
  /** queue -> attempts of its tasks in flight (dispatched and not ended). */
  private readonly busy = new Map<string, number>();
  /** worker id -> the token that registered it first, while it is connected or runs attempts. */
  private readonly bound = new Map<string, WorkerBinding>();

  /** An event of a `worker-<id>` stream. */
  applyWorker(e: DomainEvent & Recorded): void {
    if (e.type === "WorkerConnected") {
      const d = e.data;
      let links = this.links.get(d.worker);
      if (!links || links.size === 0) {
        links = new Map();
        this.links.set(d.worker, links);
        this.forget(d.worker);
      }
      if (!this.bound.has(d.worker))
        this.bound.set(d.worker, d.token !== undefined ? { token: d.token } : {});
      links.set(d.scheduler ?? "", {
        id: d.worker,
        host: d.host,
        queues: [...d.queues],
        capacity: d.capacity,
        version: d.version,
        ...(d.scheduler !== undefined ? { scheduler: d.scheduler } : {}),
        ...(d.token !== undefined ? { token: d.token } : {}),
        since: e.metadata.recordedAt,
      });
      this.merge(d.worker);
      this.heard.set(d.worker, e.metadata.recordedAt);
      const running = this.runs.get(d.worker) ?? new Set<string>();
      this.runs.set(d.worker, running);
      // After a reconnect it announces what it still runs: those attempts are its own again.
      for (const token of d.running) {
        const a = this.attempts.get(token);
        if (!a) continue;
        if (a.worker !== undefined && a.worker !== d.worker) this.runs.get(a.worker)?.delete(token);
        this.attempts.set(token, { ...a, worker: d.worker });
        running.add(token);
      }
    } else if (e.type === "WorkerDisconnected") {
      const w = this.live.get(e.data.worker);
      if (!w) return;
      // Gone from one scheduler (the one named), or from all when none is named.
      const links = this.links.get(e.data.worker);
      if (e.data.scheduler !== undefined) links?.delete(e.data.scheduler);
      else links?.clear();
      if (links && links.size > 0) {
        this.merge(e.data.worker);
        return;
      }
      this.links.delete(e.data.worker);
      this.live.delete(e.data.worker);
      this.heard.delete(e.data.worker);
      // Its attempts stay its own until they end (a lost worker's), then it holds nothing here.
      if (!this.runs.get(e.data.worker)?.size) this.unbind(e.data.worker);
      this.gone.push({ ...w, until: e.metadata.recordedAt, reason: e.data.reason });
      if (this.gone.length > RECENT_DISCONNECTED_WORKERS) this.gone.splice(0, 1);
    }
  }

  /**
   * The worker as the log shows it now: its latest registration, with the capacity of all its
   * registrations (one per scheduler it is connected to, each with its share) and their schedulers.
   */
  private merge(worker: string): void {
    const links = [...(this.links.get(worker)?.values() ?? [])];
    const latest = links.reduce((a, b) => (b.since >= a.since ? b : a));
    const schedulers = links.flatMap((l) => (l.scheduler !== undefined ? [l.scheduler] : []));
    const { scheduler: _one, ...rest } = latest;
    this.live.set(worker, {
      ...rest,
      capacity: links.reduce((n, l) => n + l.capacity, 0),
      ...(schedulers.length > 0 ? { scheduler: schedulers.join(", ") } : {}),
    });
  }

  /** Workers connected to several schedulers of a Kafka log: one registration each. */
  connections(): Array<{ readonly worker: string; readonly scheduler: string; readonly since: string }> {
    const out: Array<{ worker: string; scheduler: string; since: string }> = [];
    for (const [worker, links] of this.links)
      for (const [scheduler, w] of links)
        if (scheduler !== "") out.push({ worker, scheduler, since: w.since });
    return out;
  }

  /**
   * An event of an attempt stream, once the instance fold applied it: of the task `task` (its
   * id), at `logicalDate`, whose declaration names `queue` now. O(1), and no allocation for a
   * task with no queue on the scheduler's own workers: a look-up of a token or a worker at most.
   */
  applyAttempt(
    e: DomainEvent & Recorded,
    task: string,
    logicalDate: string,
    queue: string | undefined,
  ): void {
    switch (e.type) {
      case "DispatchIntended":
        if (queue === undefined) return;
        this.attempts.set(e.data.token, {
          token: e.data.token,
          stream: e.streamId,
          task,
          logicalDate,
          attempt: e.data.attempt,
          queue,
          intendedAt: e.metadata.recordedAt,
        });
        this.busy.set(queue, (this.busy.get(queue) ?? 0) + 1);
        return;
      case "AttemptStarted": {
        const worker = this.live.get(e.data.workerId) ? e.data.workerId : undefined;
        const held = this.attempts.get(e.data.token);
        if (!held && worker === undefined) return;
        const a: WorkerAttempt = held ?? {
          token: e.data.token,
          stream: e.streamId,
          task,
          logicalDate,
          attempt: e.data.attempt,
          intendedAt: e.metadata.recordedAt,
        };
        if (a.worker !== undefined && a.worker !== worker) this.runs.get(a.worker)?.delete(a.token);
        const { worker: _old, ...rest } = a;
        this.attempts.set(a.token, {
          ...rest,
          ...(worker !== undefined ? { worker } : {}),
          startedAt: e.metadata.recordedAt,
        });
        if (worker !== undefined) {
          this.runs.get(worker)?.add(a.token);
          this.heard.set(worker, e.metadata.recordedAt);
        }
        return;
      }
      case "AttemptLeaseExtended":
        this.heardFrom(e.data.token, e.metadata.recordedAt);
        return;
      case "AttemptSucceeded":
      case "AttemptFailed":
        // A report of the worker itself (not the reconcile loop's verdict on a lost one).
        if (e.data.workerId !== undefined)
          this.heardFrom(e.data.token, e.metadata.recordedAt, e.data.workerId);
        this.ended(e.data.token);
        return;
      case "AttemptAbandoned":
      case "AttemptCancelled":
        this.ended(e.data.token);
        return;
      default:
        return;
    }
  }

  /** The worker running the attempt `token`, if followed and on one connected, was heard from. */
  private heardFrom(token: string, at: string, reporter?: string): void {
    const worker = this.attempts.get(token)?.worker;
    if (worker === undefined || (reporter !== undefined && reporter !== worker)) return;
    if (this.heard.has(worker)) this.heard.set(worker, at);
  }

  private ended(token: string): void {
    const a = this.attempts.get(token);
    if (!a) return;
    this.attempts.delete(token);
    if (a.worker !== undefined) {
      const running = this.runs.get(a.worker);
      running?.delete(token);
      if (running?.size === 0 && !this.live.has(a.worker)) this.unbind(a.worker);
    }
    if (a.queue !== undefined) {
      const n = (this.busy.get(a.queue) ?? 1) - 1;
      if (n > 0) this.busy.set(a.queue, n);
      else this.busy.delete(a.queue);
    }
  }

  /** A worker not connected that runs nothing: its id is free for any token again. */
  private unbind(worker: string): void {
    this.runs.delete(worker);
    this.bound.delete(worker);
  }

  /**
   * The token worker `id` is bound to: the one that registered it first, for as long as it is
   * connected or attempts started on it are in flight (another token registering the id would
   * take them over); undefined: the id is free.
   */
  boundTo(worker: string): WorkerBinding | undefined {
    return this.bound.get(worker);
  }

  /** A worker connecting again is no longer among those gone. */
  private forget(worker: string): void {
    for (let i = this.gone.length - 1; i >= 0; i--) if (this.gone[i]?.id === worker) this.gone.splice(i, 1);
  }

  /** How many connected workers serve `queue`, their slots, and the queue's attempts in flight. */
  load(queue: string): QueueLoad {
    let connected = 0;
    let slots = 0;
    for (const w of this.live.values()) {
      if (!w.queues.includes(queue)) continue;
      connected += 1;
      slots += w.capacity;
    }
    return { connected, slots, busy: this.busy.get(queue) ?? 0 };
  }

  /** The connected workers, by id, each with the attempts it runs now (oldest start first). */
  connected(): ConnectedWorkerView[] {
    return [...this.live.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((w) => ({ ...w, lastHeard: this.heard.get(w.id) ?? w.since, running: this.runningOn(w.id) }));
  }

  /** Workers gone recently, the latest first. */
  disconnected(): DisconnectedWorker[] {
    return [...this.gone].reverse();
  }

  /** The attempts started on `worker` and not ended. */
  runningOn(worker: string): WorkerAttempt[] {
    const out: WorkerAttempt[] = [];
    for (const token of this.runs.get(worker) ?? []) {
      const a = this.attempts.get(token);
      if (a) out.push(a);
    }
    return out.sort((a, b) => ((a.startedAt ?? "") < (b.startedAt ?? "") ? -1 : 1));
  }

  /** The attempt in flight with this token, if followed. */
  attempt(token: string): WorkerAttempt | undefined {
    return this.attempts.get(token);
  }

  toSnapshot(): WorkersSnapshot {
    return {
      connected: [...this.links.values()].flatMap((links) =>
        [...links.values()].map((w) => ({ ...w, lastHeard: this.heard.get(w.id) ?? w.since })),
      ),
      disconnected: [...this.gone],
      attempts: [...this.attempts.values()],
      bound: [...this.bound].map(([worker, b]) => ({ worker, ...b })),
    };
  }

  static fromSnapshot(s: WorkersSnapshot | undefined): WorkersProjection {
    const p = new WorkersProjection();
    if (!s) return p;
    for (const { lastHeard, ...w } of s.connected) {
      const links = p.links.get(w.id) ?? new Map<string, WorkerRecord>();
      p.links.set(w.id, links);
      links.set(w.scheduler ?? "", w);
      p.merge(w.id);
      p.heard.set(w.id, lastHeard ?? w.since);
      p.runs.set(w.id, new Set());
      if (!p.bound.has(w.id)) p.bound.set(w.id, w.token !== undefined ? { token: w.token } : {});
    }
    for (const { worker, ...b } of s.bound ?? []) p.bound.set(worker, b);
    p.gone.push(...s.disconnected);
    for (const a of s.attempts) {
      p.attempts.set(a.token, a);
      if (a.worker !== undefined) {
        const running = p.runs.get(a.worker) ?? new Set<string>();
        p.runs.set(a.worker, running);
        running.add(a.token);
      }
      if (a.queue !== undefined) p.busy.set(a.queue, (p.busy.get(a.queue) ?? 0) + 1);
    }
    // A snapshot taken before bindings: a worker gone that runs attempts is bound to its last token.
    if (s.bound === undefined)
      for (const worker of p.runs.keys()) {
        if (p.bound.has(worker)) continue;
        const gone = s.disconnected.findLast((g) => g.id === worker);
        if (gone) p.bound.set(worker, gone.token !== undefined ? { token: gone.token } : {});
      }
    return p;
  }
}
