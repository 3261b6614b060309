import type { Batch, RunCommand, WorkerCommand, WorkerReport } from "../protocol.js";
import type { RegisterAnswer } from "../remote-protocol.js";
import { WorkerRuntime, type WorkerRuntimeOptions } from "../runtime.js";
import type { Link } from "./link.js";
import { type LinkHub, SchedulerLink, sleep } from "./scheduler-link.js";

export { FatalRefusal } from "./scheduler-link.js";

/**
 * How often the fence looks at the attempts' silence: what it takes of the third of a lease
 * between the fence and the scheduler's earliest retry (a 4 s lease keeps about a second).
 */
const FENCE_LOOK_MS = 200;

export interface RemoteWorkerOptions {
  /** One link per scheduler (several share a Kafka log: each gives the attempts of its shards). */
  readonly links: readonly Link[];
  readonly id: string;
  readonly host: string;
  readonly queues: readonly string[];
  /** Attempts run at once, across every scheduler (each link gets a share: see capacityShares). */
  readonly capacity: number;
  /** Its build, e.g. `chronolog 0.1.0`. */
  readonly version: string;
  /** How the attempts run here (staging, output files, faults): as a local worker's. */
  readonly runtime: Omit<WorkerRuntimeOptions, "workerId" | "capacity" | "send" | "outputMaxBytes">;
  readonly log: (message: string) => void;
  /** Its clock for silences (ms); default: monotonic (performance.now). */
  readonly now?: () => number;
}

/**
 * The worker's capacity split between its links, as evenly as it goes: each scheduler sees only
 * the attempts it gave, so a share each keeps the worker within its capacity whatever they do.
 */
export function capacityShares(capacity: number, links: number): number[] {
  if (links < 1 || capacity < links)
    throw new Error(
      `a capacity of ${capacity} cannot be shared by ${links} schedulers: give at least one attempt to each`,
    );
  return Array.from(
    { length: links },
    (_, i) => Math.floor(capacity / links) + (i < capacity % links ? 1 : 0),
  );
}

/**
 * Whether a run came too late to be started on its own: an idempotent attempt (one that waits
 * for no start permission) whose command took a quarter of its lease or more to come. The
 * worker's fence kills an attempt two thirds of its lease after the last report the scheduler
 * heard (or after its command came), so that it ends before the scheduler, a lease after giving
 * it, may take it for lost and give its retry out; that holds only for a command that came within
 * the lease's other third, less the time between two looks of the fence and the kill: a quarter
 * keeps that margin. A late one reports its start and waits, unrun, for the scheduler's answer:
 * accepted, the attempt is current and its lease runs from then; refused, or not delivered, it
 * never runs. One that waits for its start permission anyway is safe however late.
 */
export function lateRun(cmd: RunCommand, lateMs: number): boolean {
  return cmd.awaitProceed !== true && lateMs * 4 >= cmd.leaseSeconds * 1000;
}

/**
 * A worker on another host, speaking the remote worker protocol (version 1) to the API of one
 * scheduler or of several sharing a Kafka log: a link to each (SchedulerLink), one runtime for
 * the attempts of all. Each attempt belongs to the link that gave it, which reports it. When a
 * link breaks, its attempts keep running: the scheduler that owns their shard next (the same one
 * restarted, or another) adopts them when it asks the worker about them (a `query`) or the link
 * registers again announcing them; from then on their reports go over the link that adopted
 * them. An attempt whose link delivers nothing for two thirds of its lease is fenced (killed, if
 * idempotent) before anyone may take it for lost.
 */
export class RemoteWorker implements LinkHub {
  private runtime: WorkerRuntime | undefined;
  private readonly links: SchedulerLink[];
  /** token -> the link that reports it. */
  private readonly owner = new Map<string, SchedulerLink>();
  private timers: NodeJS.Timeout[] = [];
  stopping = false;

  constructor(private readonly o: RemoteWorkerOptions) {
    const shares = capacityShares(o.capacity, o.links.length);
    this.links = o.links.map((l, i) => new SchedulerLink(l, i, shares[i] as number, this));
  }

  get id(): string {
    return this.o.id;
  }
  get host(): string {
    return this.o.host;
  }
  get queues(): readonly string[] {
    return this.o.queues;
  }
  get version(): string {
    return this.o.version;
  }

  log(message: string): void {
    this.o.log(message);
  }

  /**
   * The worker's clock for silences and leases (ms): monotonic, so that the wall clock set back
   * (or forward) never holds a fence off, nor fires it early.
   */
  now(): number {
    return this.o.now ? this.o.now() : performance.now();
  }

  /** Runs until `stop`; rejects with a FatalRefusal when a scheduler refuses the worker for good. */
  async run(): Promise<void> {
    this.timers.push(
      setInterval(() => {
        if (this.runtime) for (const l of this.links) l.fence(this.runtime);
      }, FENCE_LOOK_MS),
    );
    this.timers.push(
      setInterval(() => {
        for (const l of this.links) {
          void l.uploads.pump();
          void l.deliver(true);
        }
      }, 1000),
    );
    try {
      await Promise.all(this.links.map((l) => l.run()));
    } catch (error) {
      // One scheduler refusing this worker for good stops it: its flags are wrong for all. It
      // takes nothing more, stops what runs, and delivers what it can before its goodbye, which
      // ends what it was given and never started (see the scheduler's goodbye).
      this.stopping = true;
      if (this.runtime) await this.runtime.shutdown(0);
      await Promise.all(this.links.map((l) => l.deliver(false).catch(() => {})));
      await Promise.all(this.links.map((l) => l.goodbye()));
      throw error;
    } finally {
      for (const t of this.timers) clearInterval(t);
    }
  }

  /**
   * Stops taking work: running attempts get `graceMs` to finish (then are stopped), their
   * reports are delivered, and the worker says goodbye to each scheduler.
   */
  stop(graceMs: number): Promise<void> {
    // Asked again (a second Ctrl-C): what runs is stopped now, and the first stop's reports
    // and goodbyes are still what it waits for.
    if (this.stopping) {
      this.runtime?.killAll("worker stopped at once", true);
      return this.stopped ?? Promise.resolve();
    }
    this.stopping = true;
    this.stopped = this.stopGracefully(graceMs);
    return this.stopped;
  }

  /** The first stop, whole: see stop. */
  private stopped: Promise<void> | undefined;

  private async stopGracefully(graceMs: number): Promise<void> {
    if (this.runtime) await this.runtime.shutdown(graceMs);
    for (let i = 0; i < 20 && this.links.some((l) => l.pending.length > 0); i++) {
      await Promise.all(this.links.map((l) => l.deliver(false).catch(() => {})));
      if (this.links.some((l) => l.pending.length > 0)) await sleep(250);
    }
    // Goodbye first: the stream closing before it would read as a broken link.
    await Promise.all(this.links.map((l) => l.goodbye()));
  }

  runtimeFor(answer: RegisterAnswer): WorkerRuntime {
    this.runtime ??= new WorkerRuntime({
      ...this.o.runtime,
      // Its scheduler outlives it: what it drops unstarted is retried at once, not after a lease.
      reportQueuedAtShutdown: true,
      workerId: this.o.id,
      capacity: this.o.capacity,
      outputMaxBytes: answer.outputMaxBytes,
      send: (batch) => this.collect(batch),
    });
    return this.runtime;
  }

  owns(token: string, link: SchedulerLink): boolean {
    return this.owner.get(token) === link;
  }

  delivered(token: string, link: SchedulerLink): void {
    if (this.owner.get(token) === link) this.owner.delete(token);
  }

  startAnswered(token: string, refused: string | undefined): void {
    if (refused === undefined) this.runtime?.proceed(token);
    else this.runtime?.cancel(token, `its start was refused: ${refused}`, 0);
  }

  commands(link: SchedulerLink, messages: readonly WorkerCommand[], lateMs = 0): void {
    const runtime = this.runtime as WorkerRuntime;
    for (const m of messages) {
      switch (m.kind) {
        case "run": {
          // Re-sent for an attempt here or just finished, or come as the worker stops: the
          // runtime ignores it, and nothing is held for it (it would be fenced, and announced
          // at the next registration, though nothing runs).
          if (!runtime.takes(m.token)) break;
          const late = lateRun(m, lateMs) && !link.held.has(m.token);
          if (!this.owner.has(m.token)) this.owner.set(m.token, link);
          link.hold(m, late);
          if (late) {
            this.log(
              `held: the run of ${m.token} came ${(lateMs / 1000).toFixed(1)} s after ${link.origin} sent it, a quarter of its lease or more (it may have been given up and run elsewhere since): it starts once the scheduler accepts its start`,
            );
            // Its start reported, it waits for the scheduler's answer (see startAnswered).
            runtime.handleCommand({ ...m, awaitProceed: true });
          } else runtime.handleCommand(m);
          break;
        }
        case "query":
          // Request ids are each scheduler's own: tagged with the link, to answer the one that asked.
          link.asked.set(m.requestId, m.tokens);
          runtime.handleCommand({ ...m, requestId: `${link.index}:${m.requestId}` });
          break;
        // A scheduler's shutdown is not this worker's: it reconnects to the next one.
        case "shutdown":
          break;
        default:
          runtime.handleCommand(m);
      }
    }
  }

  /** The runtime's reports, each to the link that answers for its attempt. */
  private collect(batch: Batch<WorkerReport>): void {
    for (const r of batch.messages) {
      if (r.kind === "ready") continue;
      if (r.kind === "known") {
        this.known(r);
        continue;
      }
      const link = this.owner.get(r.token);
      if (!link) continue;
      link.push(r);
    }
  }

  /**
   * The answer to a scheduler's question: the asked attempts this worker runs, or finished and
   * has not reported yet. One another link holds goes over to the asking link: a scheduler asks
   * only about attempts of the shards it owns (the one that gave it died, was cut off, or the
   * shard moved), and adopts it, its token being current in the log; its reports go there from
   * now on, so that the owner of its shard applies them.
   */
  private known(r: Extract<WorkerReport, { kind: "known" }>): void {
    const colon = r.requestId.indexOf(":");
    const link = this.links[Number(r.requestId.slice(0, colon))];
    if (colon < 0 || !link) return;
    const requestId = r.requestId.slice(colon + 1);
    const asked = link.asked.get(requestId);
    link.asked.delete(requestId);
    const waiting = this.links.flatMap((l) => [...l.pending, ...l.sending]);
    const wanted = asked?.length ? new Set(asked) : null;
    const finished = waiting.flatMap((p) =>
      (p.kind === "succeeded" || p.kind === "failed") && (!wanted || wanted.has(p.token)) ? [p.token] : [],
    );
    const running = [...new Set([...r.running, ...finished])];
    // The answer first: the scheduler adopts the attempts it names before their reports arrive.
    link.push({ ...r, requestId, running });
    for (const t of running) {
      const holder = this.owner.get(t);
      if (holder && holder !== link) this.move(t, holder, link);
    }
  }

  private move(token: string, from: SchedulerLink, to: SchedulerLink): void {
    this.owner.set(token, to);
    to.adopt(token, from.release(token));
    this.log(`attempt ${token} goes over from ${from.origin} to ${to.origin}, which adopted it`);
  }
}
