import type { Batch, RunCommand, WorkerCommand, WorkerReport } from "../protocol.js";
import {
  type CommandsEvent,
  MAX_OUTPUT_CHUNK,
  REMOTE_PROTOCOL_VERSION,
  type RegisterAnswer,
  type RegisterRequest,
  type ReportsAnswer,
  SESSION_HEADER,
} from "../remote-protocol.js";
import { WorkerRuntime, type WorkerRuntimeOptions } from "../runtime.js";
import { type Link, LinkDown } from "./link.js";
import { OutputUploads } from "./output-upload.js";

export interface RemoteWorkerOptions {
  readonly link: Link;
  readonly id: string;
  readonly host: string;
  readonly queues: readonly string[];
  readonly capacity: number;
  /** Its build, e.g. `chronolog 0.1.0`. */
  readonly version: string;
  /** How the attempts run here (staging, output files, faults): as a local worker's. */
  readonly runtime: Omit<WorkerRuntimeOptions, "workerId" | "capacity" | "send" | "outputMaxBytes">;
  readonly log: (message: string) => void;
  readonly now?: () => number;
}

/** A refusal the worker cannot get past by trying again (a version or a token the scheduler refuses). */
export class FatalRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FatalRefusal";
  }
}

interface Held {
  readonly leaseMs: number;
  readonly idempotent: boolean;
  fenced: boolean;
}

/** Longest wait between two attempts to reconnect. */
const MAX_BACKOFF_MS = 10_000;
/** Most reports kept while the scheduler cannot be reached (heartbeats are dropped first). */
const MAX_PENDING = 100_000;
/** A batch of reports stays under this many bytes of JSON (the API's body limit is larger). */
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * A worker on another host, speaking the remote worker protocol (version 1) to a scheduler's
 * API: registers (announcing what it still runs), reads its commands from a Server-Sent Events
 * stream into the same WorkerRuntime a local worker runs, posts its reports in batches and its
 * attempts' output in chunks. When the link breaks it reconnects with backoff. When it cannot
 * deliver reports for two thirds of an attempt's lease it fences itself: it kills its idempotent
 * attempts before the lease can run out, so that their retry elsewhere never overlaps them (an
 * attempt that is not idempotent is never retried on its own: it finishes, and its report counts
 * only if the attempt is still current when it arrives).
 */
export class RemoteWorker {
  private runtime: WorkerRuntime | undefined;
  private answer: RegisterAnswer | undefined;
  private readonly held = new Map<string, Held>();
  /** Reports not yet delivered, in order. */
  private pending: WorkerReport[] = [];
  /** The batch being posted now. */
  private sending: readonly WorkerReport[] = [];
  /** Tokens the scheduler said to stop: nothing more of them is reported. */
  private readonly stopped = new Set<string>();
  /** query request id -> the tokens asked about. */
  private readonly asked = new Map<string, readonly string[]>();
  private readonly uploads: OutputUploads;
  private readonly now: () => number;
  private lastDelivered: number;
  private delivering: Promise<void> | null = null;
  private streamAbort: AbortController | null = null;
  private stopping = false;
  private timers: NodeJS.Timeout[] = [];
  private backoffMs = 250;

  constructor(private readonly o: RemoteWorkerOptions) {
    this.now = o.now ?? Date.now;
    this.lastDelivered = this.now();
    this.uploads = new OutputUploads(
      o.link,
      o.id,
      () => this.answer?.session ?? "",
      () => this.answer?.maxOutputChunk ?? MAX_OUTPUT_CHUNK,
    );
  }

  /** Runs until `stop`; rejects with a FatalRefusal when the scheduler refuses the worker for good. */
  async run(): Promise<void> {
    this.timers.push(setInterval(() => this.fence(), 500));
    this.timers.push(
      setInterval(() => {
        void this.uploads.pump();
        void this.deliver(true);
      }, 1000),
    );
    try {
      while (!this.stopping) {
        try {
          await this.register();
          this.backoffMs = 250;
          await this.listen();
        } catch (error) {
          if (error instanceof FatalRefusal) throw error;
          if (this.stopping) break;
          this.o.log(`link to ${this.o.link.base.origin}: ${(error as Error).message}; trying again`);
        }
        if (this.stopping) break;
        await sleep(this.backoffMs + Math.random() * this.backoffMs * 0.5);
        this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
      }
    } finally {
      for (const t of this.timers) clearInterval(t);
    }
  }

  /**
   * Stops taking work: running attempts get `graceMs` to finish (then are stopped), their
   * reports are delivered, and the worker says goodbye.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.stopping) {
      this.runtime?.killAll("worker stopped at once", true);
      return;
    }
    this.stopping = true;
    if (this.runtime) await this.runtime.shutdown(graceMs);
    for (let i = 0; i < 20 && this.pending.length > 0; i++) {
      await this.deliver(false).catch(() => {});
      if (this.pending.length > 0) await sleep(250);
    }
    // Goodbye first: the stream closing before it would read as a broken link.
    if (this.answer)
      await this.o.link
        .request("DELETE", this.path(""), { headers: { [SESSION_HEADER]: this.answer.session } })
        .catch(() => {});
    this.streamAbort?.abort();
    this.o.link.close();
  }

  private path(rest: string): string {
    return `/api/v1/workers/${encodeURIComponent(this.o.id)}${rest}`;
  }

  private async register(): Promise<void> {
    // What it runs, and what it finished whose reports are not delivered yet: both are its.
    const running = [
      ...new Set([
        ...(this.runtime ? this.runtime.knownTokens() : []),
        ...[...this.sending, ...this.pending].flatMap((r) =>
          r.kind === "known" || r.kind === "ready" ? [] : [r.token],
        ),
      ]),
    ];
    const body: RegisterRequest = {
      protocol: REMOTE_PROTOCOL_VERSION,
      id: this.o.id,
      host: this.o.host,
      queues: this.o.queues,
      capacity: this.o.capacity,
      version: this.o.version,
      running,
    };
    const res = await this.o.link.request("POST", "/api/v1/workers", { json: body });
    const doc = res.json<Record<string, unknown>>();
    if (res.status !== 200) {
      const detail = typeof doc?.detail === "string" ? doc.detail : res.body.toString("utf8").slice(0, 500);
      // The version, the token or the id refused: trying again changes nothing.
      if (res.status === 400 || res.status === 401 || res.status === 403)
        throw new FatalRefusal(`the scheduler refused this worker (HTTP ${res.status}): ${detail}`);
      throw new Error(`registration answered HTTP ${res.status}: ${detail}`);
    }
    const answer = doc as unknown as RegisterAnswer;
    if (answer.protocol !== REMOTE_PROTOCOL_VERSION)
      throw new FatalRefusal(
        `the scheduler speaks worker protocol ${answer.protocol}, this worker speaks ${REMOTE_PROTOCOL_VERSION}: run a worker of the scheduler's version`,
      );
    this.answer = answer;
    this.runtime ??= new WorkerRuntime({
      ...this.o.runtime,
      workerId: this.o.id,
      capacity: this.o.capacity,
      outputMaxBytes: answer.outputMaxBytes,
      send: (batch) => this.collect(batch),
    });
    for (const t of answer.stop) {
      this.stopped.add(t);
      this.held.delete(t);
      this.uploads.forget(t);
      this.runtime.cancel(t, "the scheduler says the attempt is no longer current", 0);
    }
    this.pending = this.pending.filter((r) => !("token" in r) || !this.stopped.has(r.token));
    this.lastDelivered = this.now();
    this.o.log(
      `connected to ${this.o.link.base.origin} as ${answer.actor}: queues ${this.o.queues.join(", ")}, capacity ${this.o.capacity}${running.length > 0 ? `; ${answer.adopted.length} running attempts adopted, ${answer.stop.length} stopped` : ""}`,
    );
  }

  /** Reads the command stream until it ends or goes silent. */
  private async listen(): Promise<void> {
    const answer = this.answer as RegisterAnswer;
    const abort = new AbortController();
    this.streamAbort = abort;
    let heard = this.now();
    const watchdog = setInterval(() => {
      if (this.now() - heard > answer.silenceMs) abort.abort();
    }, 1000);
    let closedFor: string | undefined;
    try {
      await this.o.link.stream(
        this.path("/commands"),
        { [SESSION_HEADER]: answer.session },
        (event, data) => {
          heard = this.now();
          if (event === "commands") this.commands((JSON.parse(data) as CommandsEvent).messages);
          else if (event === "closed") closedFor = (JSON.parse(data) as { reason?: string }).reason;
        },
        abort.signal,
      );
    } finally {
      clearInterval(watchdog);
    }
    throw new Error(
      closedFor
        ? `the scheduler closed the command stream: ${closedFor}`
        : abort.signal.aborted
          ? `nothing heard for ${answer.silenceMs} ms`
          : "the command stream ended",
    );
  }

  private commands(messages: readonly WorkerCommand[]): void {
    const runtime = this.runtime as WorkerRuntime;
    for (const m of messages) {
      switch (m.kind) {
        case "run":
          this.hold(m);
          runtime.handleCommand(m);
          break;
        case "query":
          this.asked.set(m.requestId, m.tokens);
          runtime.handleCommand(m);
          break;
        // A scheduler's shutdown is not this worker's: it reconnects to the next one.
        case "shutdown":
          break;
        default:
          runtime.handleCommand(m);
      }
    }
  }

  private hold(cmd: RunCommand): void {
    if (this.held.has(cmd.token)) return;
    this.held.set(cmd.token, {
      leaseMs: cmd.leaseSeconds * 1000,
      idempotent: cmd.awaitProceed !== true,
      fenced: false,
    });
  }

  /** The runtime's reports: kept in order until delivered. */
  private collect(batch: Batch<WorkerReport>): void {
    for (const r of batch.messages) {
      if ("token" in r && this.stopped.has(r.token)) continue;
      if (r.kind === "known") {
        // Finished attempts whose reports are not delivered yet are still this worker's.
        const asked = this.asked.get(r.requestId);
        this.asked.delete(r.requestId);
        const finished = this.pending.filter(
          (p) =>
            (p.kind === "succeeded" || p.kind === "failed") && (!asked?.length || asked.includes(p.token)),
        );
        this.pending.push({
          ...r,
          running: [...r.running, ...finished.map((p) => (p as { token: string }).token)],
        });
        continue;
      }
      if (r.kind === "started" && r.outputPath) this.uploads.track(r.token, r.outputPath);
      this.pending.push(r);
    }
    if (this.pending.length > MAX_PENDING) this.pending = this.pending.filter((r) => r.kind !== "heartbeat");
    void this.deliver(false);
  }

  /** Posts what is pending (or, with `keepalive`, an empty batch when it is time to). */
  private deliver(keepalive: boolean): Promise<void> {
    if (this.delivering) return this.delivering;
    if (!this.answer) return Promise.resolve();
    if (
      this.pending.length === 0 &&
      !(keepalive && this.now() - this.lastDelivered >= this.answer.keepaliveMs)
    )
      return Promise.resolve();
    this.delivering = this.deliverNow().finally(() => {
      this.delivering = null;
    });
    return this.delivering;
  }

  private async deliverNow(): Promise<void> {
    do {
      const answer = this.answer as RegisterAnswer;
      const batch = this.nextBatch(answer.maxReportBatch);
      this.sending = batch;
      try {
        // An attempt's output is all home before its end is reported.
        for (const r of batch)
          if ((r.kind === "succeeded" || r.kind === "failed") && r.outputFile)
            await this.uploads.finish(r.token, r.outputFile.bytes);
        const res = await this.o.link.request("POST", this.path("/reports"), {
          headers: { [SESSION_HEADER]: answer.session },
          json: { messages: batch },
        });
        const doc = res.json<ReportsAnswer & { type?: string; detail?: string }>();
        if (res.status === 409 && doc?.type?.endsWith(":not_registered")) {
          // The scheduler does not know this session (it restarted): register again first
          // (unless that was done meanwhile: then the batch goes again, with the new session).
          this.pending.unshift(...batch);
          if (this.answer === answer) {
            this.streamAbort?.abort();
            return;
          }
          continue;
        }
        this.lastDelivered = this.now();
        for (const r of batch) if (r.kind === "succeeded" || r.kind === "failed") this.held.delete(r.token);
        if (res.status === 409)
          for (const r of doc?.refused ?? []) this.o.log(`report refused: ${r.kind} ${r.token}: ${r.reason}`);
        else if (res.status !== 200) this.o.log(`reports answered HTTP ${res.status}: ${doc?.detail ?? ""}`);
      } catch (error) {
        // Not delivered: kept (but heartbeats, which the next ones replace), tried again later.
        this.pending.unshift(...batch.filter((r) => r.kind !== "heartbeat"));
        if (!(error instanceof LinkDown))
          this.o.log(`could not deliver reports: ${(error as Error).message}`);
        return;
      }
    } while (this.pending.length > 0);
  }

  private nextBatch(max: number): WorkerReport[] {
    const out: WorkerReport[] = [];
    let bytes = 0;
    while (this.pending.length > 0 && out.length < max) {
      const r = this.pending[0] as WorkerReport;
      const size = JSON.stringify(r).length;
      if (out.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      out.push(r);
      bytes += size;
      this.pending.shift();
    }
    return out;
  }

  /**
   * No report delivered for two thirds of an attempt's lease: its idempotent attempts are
   * killed now, before the scheduler can take the lease for expired and run them again.
   */
  private fence(): void {
    if (!this.runtime) return;
    const silentMs = this.now() - this.lastDelivered;
    for (const [token, h] of this.held) {
      if (h.fenced || !h.idempotent || silentMs < (h.leaseMs * 2) / 3) continue;
      h.fenced = true;
      this.o.log(
        `fenced: no report delivered for ${Math.round(silentMs / 1000)} s, two thirds of the lease of ${token}: killing it before the scheduler may run it again`,
      );
      this.runtime.cancel(
        token,
        `fenced: no report reached the scheduler for ${Math.round(silentMs / 1000)} s`,
        0,
      );
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
