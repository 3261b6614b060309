import type { RunCommand, WorkerCommand, WorkerReport } from "../protocol.js";
import {
  type CommandsEvent,
  MAX_OUTPUT_CHUNK,
  REMOTE_PROTOCOL_VERSION,
  type RefusedReport,
  type RegisterAnswer,
  type RegisterRequest,
  type ReportsAnswer,
  SESSION_HEADER,
} from "../remote-protocol.js";
import type { WorkerRuntime } from "../runtime.js";
import { type Link, LinkDown } from "./link.js";
import { OutputUploads } from "./output-upload.js";
import { SchedulerClock } from "./scheduler-clock.js";

/** A refusal the worker cannot get past by trying again (a version or a token the scheduler refuses). */
export class FatalRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FatalRefusal";
  }
}

/** An attempt a link answers for: given to it by its scheduler, or adopted by it. */
export interface Held {
  readonly leaseMs: number;
  readonly idempotent: boolean;
  fenced: boolean;
  /** When it reached this worker: its silence is counted from then at the earliest. */
  readonly since: number;
  /**
   * Its run came late (see lateRun): it waits, unrun, until the scheduler accepts its `started`
   * report (the attempt is current, and its lease renewed), or is stopped if it refuses it.
   */
  awaitingStart?: boolean;
}

/** What a link shares with the worker it belongs to (one runtime, one owner per attempt). */
export interface LinkHub {
  readonly id: string;
  readonly host: string;
  readonly queues: readonly string[];
  readonly version: string;
  readonly stopping: boolean;
  log(message: string): void;
  now(): number;
  /** The worker's runtime, made at the first registration (it needs the scheduler's output limit). */
  runtimeFor(answer: RegisterAnswer): WorkerRuntime;
  /** Whether `token` is this link's to report. */
  owns(token: string, link: SchedulerLink): boolean;
  /** The end of an attempt was delivered on `link`: it is no longer anyone's. */
  delivered(token: string, link: SchedulerLink): void;
  /** The scheduler answered the `started` report of an attempt held for it (see Held): run it, or stop it. */
  startAnswered(token: string, refused: string | undefined): void;
  /**
   * Commands read from the link's stream, `lateMs` at the least after the scheduler queued
   * them (see SchedulerClock).
   */
  commands(link: SchedulerLink, messages: readonly WorkerCommand[], lateMs: number): void;
}

/** Longest wait between two attempts to reconnect. */
const MAX_BACKOFF_MS = 10_000;
/** Most reports kept while the scheduler cannot be reached (heartbeats are dropped first). */
const MAX_PENDING = 100_000;
/** A batch of reports stays under this many bytes of JSON (the API's body limit is larger). */
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * The worker's link to one scheduler: its registration (announcing the attempts this link
 * answers for), its command stream, its reports posted in order, its attempts' output sent home,
 * and its fence: no report delivered on it for two thirds of an attempt's lease, the link's
 * idempotent attempts are killed before that scheduler (or the next owner of their shard) may
 * take them for lost.
 */
export class SchedulerLink {
  answer: RegisterAnswer | undefined;
  readonly held = new Map<string, Held>();
  /** Reports not yet delivered, in order. */
  pending: WorkerReport[] = [];
  /** The batch being posted now. */
  sending: readonly WorkerReport[] = [];
  /** query request id (as the scheduler sent it) -> the tokens asked about. */
  readonly asked = new Map<string, readonly string[]>();
  readonly uploads: OutputUploads;
  /** The scheduler's clock, from its answers: how late its commands come. */
  readonly clock: SchedulerClock;
  lastDelivered: number;
  private delivering: Promise<void> | null = null;
  private streamAbort: AbortController | null = null;
  private backoffMs = 250;

  constructor(
    readonly link: Link,
    /** Its place among the worker's links (query ids are tagged with it). */
    readonly index: number,
    /** The attempts at once its scheduler may give it: its share of the worker's capacity. */
    readonly capacity: number,
    private readonly hub: LinkHub,
  ) {
    this.lastDelivered = hub.now();
    this.clock = new SchedulerClock(() => hub.now());
    this.uploads = new OutputUploads(
      link,
      hub.id,
      () => this.answer?.session ?? "",
      () => this.answer?.maxOutputChunk ?? MAX_OUTPUT_CHUNK,
    );
  }

  get origin(): string {
    return this.link.base.origin;
  }

  /** Registers, listens, and reconnects with backoff until the worker stops. */
  async run(): Promise<void> {
    while (!this.hub.stopping) {
      try {
        await this.register();
        this.backoffMs = 250;
        await this.listen();
      } catch (error) {
        if (error instanceof FatalRefusal) throw error;
        if (this.hub.stopping) break;
        this.hub.log(`link to ${this.origin}: ${(error as Error).message}; trying again`);
      }
      if (this.hub.stopping) break;
      await sleep(this.backoffMs + Math.random() * this.backoffMs * 0.5);
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
    }
  }

  /** The tokens this link answers for: those it holds, and those whose reports wait on it. */
  tokens(): string[] {
    return [
      ...new Set([
        ...this.held.keys(),
        ...[...this.sending, ...this.pending].flatMap((r) =>
          r.kind === "known" || r.kind === "ready" ? [] : [r.token],
        ),
      ]),
    ];
  }

  private path(rest: string): string {
    return `/api/v1/workers/${encodeURIComponent(this.hub.id)}${rest}`;
  }

  private async register(): Promise<void> {
    const running = this.tokens();
    const body: RegisterRequest = {
      protocol: REMOTE_PROTOCOL_VERSION,
      id: this.hub.id,
      host: this.hub.host,
      queues: this.hub.queues,
      capacity: this.capacity,
      version: this.hub.version,
      running,
    };
    // The scheduler renews the leases of the attempts it adopts when it hears this: from then,
    // at the latest, are they silent (see fence).
    const sentAt = this.hub.now();
    const res = await this.link.request("POST", "/api/v1/workers", { json: body });
    const doc = res.json<Record<string, unknown>>();
    if (res.status !== 200) {
      const detail = typeof doc?.detail === "string" ? doc.detail : res.body.toString("utf8").slice(0, 500);
      // The version, the token or the id refused: trying again changes nothing.
      if (res.status === 400 || res.status === 401 || res.status === 403)
        throw new FatalRefusal(`${this.origin} refused this worker (HTTP ${res.status}): ${detail}`);
      throw new Error(`registration answered HTTP ${res.status}: ${detail}`);
    }
    const answer = doc as unknown as RegisterAnswer;
    this.clock.registered(answer.now);
    if (answer.protocol !== REMOTE_PROTOCOL_VERSION)
      throw new FatalRefusal(
        `the scheduler at ${this.origin} speaks worker protocol ${answer.protocol}, this worker speaks ${REMOTE_PROTOCOL_VERSION}: run a worker of the scheduler's version`,
      );
    this.answer = answer;
    const runtime = this.hub.runtimeFor(answer);
    const stop = new Set(answer.stop);
    for (const t of stop) {
      this.held.delete(t);
      this.uploads.forget(t);
      runtime.cancel(t, "the scheduler says the attempt is no longer current", 0);
    }
    this.pending = this.pending.filter((r) => !("token" in r) || !stop.has(r.token));
    this.lastDelivered = sentAt;
    this.hub.log(
      `connected to ${this.origin} as ${answer.actor}: queues ${this.hub.queues.join(", ")}, capacity ${this.capacity}${running.length > 0 ? `; ${answer.adopted.length} running attempts adopted, ${answer.stop.length} stopped` : ""}`,
    );
    return;
  }

  /** Reads the command stream until it ends or goes silent. */
  private async listen(): Promise<void> {
    const answer = this.answer as RegisterAnswer;
    const abort = new AbortController();
    this.streamAbort = abort;
    let heard = this.hub.now();
    const watchdog = setInterval(() => {
      if (this.hub.now() - heard > answer.silenceMs) abort.abort();
    }, 1000);
    let closedFor: string | undefined;
    try {
      await this.link.stream(
        this.path("/commands"),
        { [SESSION_HEADER]: answer.session },
        (event, data) => {
          heard = this.hub.now();
          if (event === "commands") {
            const batch = JSON.parse(data) as CommandsEvent;
            this.hub.commands(this, batch.messages, this.clock.since(batch.at));
          } else if (event === "closed") closedFor = (JSON.parse(data) as { reason?: string }).reason;
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

  hold(cmd: RunCommand, awaitingStart = false): void {
    if (this.held.has(cmd.token)) return;
    this.held.set(cmd.token, {
      leaseMs: cmd.leaseSeconds * 1000,
      idempotent: cmd.awaitProceed !== true,
      fenced: false,
      since: this.hub.now(),
      ...(awaitingStart ? { awaitingStart } : {}),
    });
  }

  /**
   * The answer to a batch: the attempts held for their start's answer run, or stop (see Held).
   * `refused` null: the batch itself was refused, and dropped (their starts will not be heard).
   */
  private startsAnswered(batch: readonly WorkerReport[], refused: readonly RefusedReport[] | null): void {
    for (const r of batch) {
      if (r.kind !== "started") continue;
      const h = this.held.get(r.token);
      if (!h?.awaitingStart) continue;
      h.awaitingStart = false;
      // Any refusal of the start stops it, whatever it says (or fails to say) why.
      const refusal = refused?.find((x) => x.kind === "started" && x.token === r.token);
      const why =
        refused === null
          ? "the report was not delivered"
          : refusal &&
            (typeof refusal.reason === "string" && refusal.reason !== "" ? refusal.reason : "refused");
      this.hub.startAnswered(r.token, why);
    }
  }

  /** A report for this link's scheduler, kept in order until delivered. */
  push(r: WorkerReport): void {
    if (r.kind === "started" && r.outputPath) this.uploads.track(r.token, r.outputPath);
    this.pending.push(r);
    if (this.pending.length > MAX_PENDING) this.pending = this.pending.filter((p) => p.kind !== "heartbeat");
    void this.deliver(false);
  }

  /** Posts what is pending (or, with `keepalive`, an empty batch when it is time to). */
  deliver(keepalive: boolean): Promise<void> {
    if (this.delivering) return this.delivering;
    if (!this.answer) return Promise.resolve();
    if (
      this.pending.length === 0 &&
      !(keepalive && this.hub.now() - this.lastDelivered >= this.answer.keepaliveMs)
    )
      return Promise.resolve();
    this.delivering = this.deliverNow().finally(() => {
      this.delivering = null;
    });
    return this.delivering;
  }

  private async deliverNow(): Promise<void> {
    // Ends put back once for what needed no upload go in the next batch whatever comes behind
    // them: reports arriving meanwhile do not hold them back again.
    let endsWaited = false;
    do {
      const answer = this.answer as RegisterAnswer;
      const { batch, body, endsPutBack } = this.nextBatch(answer.maxReportBatch, !endsWaited);
      endsWaited = endsPutBack;
      if (batch.length === 0 && this.pending.length > 0) continue;
      this.sending = batch;
      // Answered, the request renewed the leases of this link's attempts when the scheduler
      // heard it, which was after this: the fence counts from here, never from the answer (which
      // waits for the reports to be written, and would give an attempt more than its lease).
      let sentAt = this.hub.now();
      try {
        // An attempt's output is all home before its end is reported (or goes with it).
        for (const r of batch) if (uploadsFirst(r)) await this.uploads.finish(r.token, r.outputFile.bytes);
        sentAt = this.hub.now();
        const res = await this.link.request("POST", this.path("/reports"), {
          headers: { [SESSION_HEADER]: answer.session, "content-type": "application/json" },
          body,
          // A request a cut link left hanging is given up in a third of the shortest lease
          // held, so that the next heartbeat goes on a fresh connection well before the fence.
          timeoutMs: this.reportTimeoutMs(),
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
        // Not heard, or not yet (a proxy's 502, 503, 504, a timeout's 408, a limit's 429): kept
        // for later, as after a broken link.
        if (res.status >= 500 || res.status === 408 || res.status === 429)
          throw new Error(`reports answered HTTP ${res.status}: ${doc?.detail ?? ""}`);
        // Only the scheduler's own answer says it heard the batch (and renewed the leases): a
        // refusal of the request itself (400, 401, 413) does not, and the fence goes on counting.
        if (res.status === 200 || (res.status === 409 && Array.isArray(doc?.refused))) {
          this.lastDelivered = Math.max(this.lastDelivered, sentAt);
          this.clock.heard(doc?.now);
          this.startsAnswered(batch, doc?.refused ?? []);
        } else this.startsAnswered(batch, null);
        for (const r of batch)
          if (r.kind === "succeeded" || r.kind === "failed") {
            this.held.delete(r.token);
            this.hub.delivered(r.token, this);
          }
        if (res.status === 409)
          for (const r of doc?.refused ?? [])
            this.hub.log(`report refused: ${r.kind} ${r.token}: ${r.reason}`);
        else if (res.status !== 200)
          this.hub.log(`reports answered HTTP ${res.status}: ${doc?.detail ?? ""}`);
      } catch (error) {
        // Not delivered: kept (but heartbeats, which the next ones replace), tried again later.
        this.pending.unshift(...batch.filter((r) => r.kind !== "heartbeat"));
        if (!(error instanceof LinkDown))
          this.hub.log(`could not deliver reports to ${this.origin}: ${(error as Error).message}`);
        return;
      } finally {
        this.sending = [];
      }
    } while (this.pending.length > 0);
  }

  /** A third of the shortest lease of the attempts held here (at most 15 s, at least 1 s). */
  private reportTimeoutMs(): number {
    let shortest = 45_000;
    for (const h of this.held.values()) shortest = Math.min(shortest, h.leaseMs);
    return Math.max(1000, Math.floor(shortest / 3));
  }

  /**
   * The next batch, and its body (each report made JSON once: to be measured, and sent):
   * reports of attempts another link took over are left for it. With `endsLast`, the ends whose
   * output must be sent first are put back when the batch holds anything else, which goes
   * first, not behind their uploads (a start above all: an attempt held for its answer waits on
   * it); they follow in the next batch, in their order.
   */
  private nextBatch(
    max: number,
    endsLast: boolean,
  ): { batch: WorkerReport[]; body: string; endsPutBack: boolean } {
    const out: WorkerReport[] = [];
    const texts: string[] = [];
    let bytes = 0;
    let taken = 0;
    const inlineMax = this.answer?.inlineOutputMax ?? 0;
    while (taken < this.pending.length && out.length < max) {
      let r = this.pending[taken] as WorkerReport;
      if ("token" in r && !this.hub.owns(r.token, this)) {
        taken += 1;
        continue;
      }
      // A small rest of the output goes with the end: one request, not an upload and a post.
      if ((r.kind === "succeeded" || r.kind === "failed") && r.outputFile && !r.outputRest && inlineMax > 0) {
        const rest = this.uploads.inlineRest(r.token, r.outputFile.bytes, inlineMax);
        if (rest) r = { ...r, outputRest: rest };
      }
      const text = JSON.stringify(r);
      if (out.length > 0 && bytes + text.length > MAX_BATCH_BYTES) break;
      out.push(r);
      texts.push(text);
      bytes += text.length;
      taken += 1;
    }
    // A start is never held behind an upload (its attempt may wait on its answer): ends go
    // back for it every time, for anything else once.
    const ends = endsLast || out.some((r) => r.kind === "started") ? out.filter(uploadsFirst) : [];
    // One splice, not a shift a report: a thousand pending leave in linear time.
    this.pending.splice(0, taken, ...(ends.length < out.length ? ends : []));
    if (ends.length === 0 || ends.length === out.length)
      return { batch: out, body: `{"messages":[${texts.join(",")}]}`, endsPutBack: false };
    const sent = out.flatMap((r, i) => (uploadsFirst(r) ? [] : [[r, texts[i] as string] as const]));
    return {
      batch: sent.map(([r]) => r),
      body: `{"messages":[${sent.map(([, t]) => t).join(",")}]}`,
      endsPutBack: true,
    };
  }

  /** Takes out the reports of `token` waiting here (to be delivered by another link). */
  release(token: string): {
    held: Held | undefined;
    reports: WorkerReport[];
    outputPath: string | undefined;
  } {
    const held = this.held.get(token);
    this.held.delete(token);
    const reports = [...this.sending, ...this.pending].filter((r) => "token" in r && r.token === token);
    this.pending = this.pending.filter((r) => !("token" in r && r.token === token));
    return { held, reports, outputPath: this.uploads.take(token) };
  }

  /** Takes an attempt over from another link, with its reports not delivered yet. */
  adopt(token: string, from: ReturnType<SchedulerLink["release"]>): void {
    if (from.held) this.held.set(token, { ...from.held, fenced: false });
    if (from.outputPath) this.uploads.track(token, from.outputPath);
    for (const r of from.reports) {
      if (r.kind === "heartbeat") continue;
      // Output carried inline was taken from where the other scheduler's copy ended: here it
      // starts from the beginning of the file.
      if ((r.kind === "succeeded" || r.kind === "failed") && r.outputRest) {
        const { outputRest: _, ...plain } = r;
        if (plain.outputFile) this.uploads.track(token, plain.outputFile.path);
        this.pending.push(plain);
      } else this.pending.push(r);
    }
    void this.deliver(false);
  }

  /**
   * No report delivered on this link for two thirds of an attempt's lease: its idempotent
   * attempts are killed now, before the scheduler can take the lease for expired and run them
   * again. The silence counts from when the last answered request was sent (the scheduler
   * renewed every attempt of the link on hearing it, later), so the kill comes a third of the
   * lease before the scheduler may retry, less the time between two looks (see RemoteWorker).
   */
  fence(runtime: WorkerRuntime): void {
    for (const [token, h] of this.held) {
      // An attempt that came after the last delivery (a retry given once a cut link is back,
      // its reports still behind a request the cut left hanging) is silent since it came.
      const silentMs = this.hub.now() - Math.max(this.lastDelivered, h.since);
      if (h.fenced || !h.idempotent || silentMs < (h.leaseMs * 2) / 3) continue;
      h.fenced = true;
      this.hub.log(
        `fenced: no report delivered to ${this.origin} for ${Math.round(silentMs / 1000)} s, two thirds of the lease of ${token}: killing it before it may run again elsewhere`,
      );
      runtime.cancel(
        token,
        `fenced: no report reached the scheduler for ${Math.round(silentMs / 1000)} s`,
        0,
      );
    }
  }

  /** Says goodbye (once the stream closing would no longer read as a broken link). */
  async goodbye(): Promise<void> {
    if (this.answer)
      await this.link
        .request("DELETE", this.path(""), { headers: { [SESSION_HEADER]: this.answer.session } })
        .catch(() => {});
    this.streamAbort?.abort();
    this.link.close();
  }
}

/** An attempt's end whose output must be sent before it is reported (not inside it). */
function uploadsFirst(
  r: WorkerReport,
): r is Extract<WorkerReport, { kind: "succeeded" | "failed" }> & { outputFile: { bytes: number } } {
  return (r.kind === "succeeded" || r.kind === "failed") && r.outputFile !== undefined && !r.outputRest;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
