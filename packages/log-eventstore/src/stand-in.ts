import { createRequire } from "node:module";
import * as grpc from "@grpc/grpc-js";

/**
 * A stand-in EventStoreDB server for tests and benchmarks: an in-process gRPC server that
 * serves the service definitions the client package itself ships (its generated
 * `*_grpc_pb.js`), so the real client library talks to it over the real wire format.
 *
 * It implements what the log backend uses: appends with each kind of expected revision (and
 * the server's idempotent answer to an append sent again with the same event ids and the
 * same expectation), reads of a stream and of `$all` forwards and backwards, catch-up
 * subscriptions to a stream or `$all` (confirmation, the events so far, caught-up, then live
 * events), the WrongExpectedVersion and StreamNotFound answers, and the server-features call.
 *
 * It proves wire compatibility with the client, not the server's semantics: one process, no
 * disk, no size limits, no leader, no idempotency window (it compares with the events right
 * after the expected revision, as the server does within its window).
 *
 * Faults, for the tests: `failNext(n)` answers the next n stream calls with UNAVAILABLE;
 * `loseNextAppendAnswer()` applies the next append and then answers UNAVAILABLE, as a lost
 * answer looks to the client; `restart()` stops the server (ending every call and
 * subscription) and starts it again on the same port with the same data.
 */

const require = createRequire(import.meta.url);
type StreamsPb = typeof import("@eventstore/db-client/generated/streams_pb.js");
type SharedPb = typeof import("@eventstore/db-client/generated/shared_pb.js");
type FeaturesPb = typeof import("@eventstore/db-client/generated/serverfeatures_pb.js");
const pb = require("@eventstore/db-client/generated/streams_pb.js") as StreamsPb;
const shared = require("@eventstore/db-client/generated/shared_pb.js") as SharedPb;
const features = require("@eventstore/db-client/generated/serverfeatures_pb.js") as FeaturesPb;
type StatusPb = typeof import("@eventstore/db-client/generated/status_pb.js");
const status = require("@eventstore/db-client/generated/status_pb.js") as StatusPb;
// google-protobuf as the client package itself resolves it.
const fromClient = createRequire(require.resolve("@eventstore/db-client"));
const { Any } = fromClient("google-protobuf/google/protobuf/any_pb.js") as {
  Any: new () => { pack(serialized: Uint8Array, name: string): void };
};
const { StreamsService } = require("@eventstore/db-client/generated/streams_grpc_pb.js") as {
  StreamsService: grpc.ServiceDefinition;
};
const { ServerFeaturesService } = require("@eventstore/db-client/generated/serverfeatures_grpc_pb.js") as {
  ServerFeaturesService: grpc.ServiceDefinition;
};

type AppendReq = InstanceType<StreamsPb["AppendReq"]>;
type AppendResp = InstanceType<StreamsPb["AppendResp"]>;
type ReadReq = InstanceType<StreamsPb["ReadReq"]>;
type ReadResp = InstanceType<StreamsPb["ReadResp"]>;
type BatchAppendReq = InstanceType<StreamsPb["BatchAppendReq"]>;
type BatchAppendResp = InstanceType<StreamsPb["BatchAppendResp"]>;
type Proposed = {
  getId(): InstanceType<SharedPb["UUID"]> | undefined;
  getMetadataMap(): { entries(): Iterable<[string, string]> } & {
    forEach(f: (v: string, k: string) => void): void;
  };
  getCustomMetadata_asU8(): Uint8Array;
  getData_asU8(): Uint8Array;
};
/** What an append expects, whichever call brought it. */
type Expected =
  | { kind: "any" }
  | { kind: "no_stream" }
  | { kind: "exists" }
  | { kind: "revision"; revision: bigint };
type Outcome = { ok: true; revision: bigint; index: number; again: boolean } | { ok: false; current: bigint };

interface Stored {
  readonly stream: string;
  readonly revision: bigint;
  /** Index in the whole log; the commit and prepare positions derive from it. */
  readonly index: number;
  readonly id: string;
  readonly metadata: ReadonlyArray<[string, string]>;
  readonly customMetadata: Uint8Array;
  readonly data: Uint8Array;
}

interface Live {
  readonly stream: string | null;
  readonly call: grpc.ServerWritableStream<ReadReq, ReadResp>;
}

const TICKS_AT_EPOCH = 621_355_968_000_000_000n;
/** Commit positions: spaced like byte offsets, never 0 (the server's are never 0 either). */
const positionOf = (index: number) => String(BigInt(index + 1) * 100n);
const indexOfPosition = (position: string) => Number(BigInt(position) / 100n) - 1;

export interface StandInCounts {
  /** Appends through the client-streaming Append call. */
  appends: number;
  /** Appends through the BatchAppend call (the client's choice when the server lists it). */
  batchAppends: number;
  reads: number;
  subscriptions: number;
  /** Appends answered as a success without writing: the same events sent again. */
  idempotent: number;
  wrongExpectedVersion: number;
  failed: number;
}

export class EventStoreStandIn {
  private server: grpc.Server | null = null;
  private readonly all: Stored[] = [];
  private readonly streams = new Map<string, Stored[]>();
  private readonly live = new Set<Live>();
  private unavailable = 0;
  private loseAnswers = 0;
  readonly counts: StandInCounts = {
    appends: 0,
    batchAppends: 0,
    reads: 0,
    subscriptions: 0,
    idempotent: 0,
    wrongExpectedVersion: 0,
    failed: 0,
  };

  private constructor(
    readonly host: string,
    public port: number,
    private readonly listBatchAppend: boolean,
  ) {}

  /**
   * Starts on `host` (default 127.0.0.1) and `port` (default: any free one). With
   * `batchAppend: false` the server-features answer leaves BatchAppend out, as older servers
   * do, and the client appends with the client-streaming Append call instead.
   */
  static async start(
    options: { host?: string; port?: number; batchAppend?: boolean } = {},
  ): Promise<EventStoreStandIn> {
    const s = new EventStoreStandIn(
      options.host ?? "127.0.0.1",
      options.port ?? 0,
      options.batchAppend ?? true,
    );
    await s.listen();
    return s;
  }

  /** The connection string a client (or `--log`) uses. */
  get url(): string {
    return `esdb://${this.host}:${this.port}?tls=false`;
  }

  /** The number of events in the whole log. */
  get size(): number {
    return this.all.length;
  }

  /** Answers the next `n` stream calls (reads, appends, subscriptions) with UNAVAILABLE. */
  failNext(n: number): void {
    this.unavailable += n;
  }

  /** Applies the next append, then answers it with UNAVAILABLE, as if the answer were lost. */
  loseNextAppendAnswer(n = 1): void {
    this.loseAnswers += n;
  }

  /** Stops the server (every call and subscription ends), waits `downMs`, starts it again. */
  async restart(downMs = 0): Promise<void> {
    await this.shutdown();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.listen();
  }

  async stop(): Promise<void> {
    await this.shutdown();
  }

  /** The events of one stream as stored: for tests that look at what the client wrote. */
  events(stream: string): ReadonlyArray<{ id: string; type: string; data: string; metadata: string }> {
    return (this.streams.get(stream) ?? []).map((e) => ({
      id: e.id,
      type: e.metadata.find(([k]) => k === "type")?.[1] ?? "",
      data: Buffer.from(e.data).toString("utf8"),
      metadata: Buffer.from(e.customMetadata).toString("utf8"),
    }));
  }

  private async listen(): Promise<void> {
    const server = new grpc.Server();
    server.addService(StreamsService, {
      append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, cb: grpc.sendUnaryData<AppendResp>) =>
        this.append(call, cb),
      read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => this.read(call),
      batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => this.batchAppend(call),
      delete: (_: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED }),
      tombstone: (_: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED }),
    });
    server.addService(ServerFeaturesService, {
      getSupportedMethods: (_: unknown, cb: grpc.sendUnaryData<unknown>) => {
        const methods = new features.SupportedMethods();
        methods.setEventStoreServerVersion("0.0.0-stand-in");
        for (const name of this.listBatchAppend ? ["read", "append", "batchappend"] : ["read", "append"]) {
          const m = new features.SupportedMethod();
          m.setServiceName("event_store.client.streams.streams");
          m.setMethodName(name);
          methods.addMethods(m);
        }
        cb(null, methods);
      },
    });
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${this.host}:${this.port}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );
    this.server = server;
  }

  private async shutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    for (const l of this.live)
      l.call.emit("error", { code: grpc.status.UNAVAILABLE, details: "server stopped" });
    this.live.clear();
    server.forceShutdown();
  }

  /** Consumes one injected UNAVAILABLE, if any is left. */
  private fault(): grpc.ServiceError | null {
    if (this.unavailable <= 0) return null;
    this.unavailable -= 1;
    this.counts.failed += 1;
    return Object.assign(new Error("stand-in: unavailable"), {
      code: grpc.status.UNAVAILABLE,
      details: "stand-in: unavailable",
      metadata: new grpc.Metadata(),
    });
  }

  /** Decides and applies one append: the server's compare-and-set and idempotent answer. */
  private apply(name: string, expected: Expected, proposed: readonly Proposed[]): Outcome {
    const stream = this.streams.get(name) ?? [];
    const current = BigInt(stream.length) - 1n;
    const ids = proposed.map((p) => p.getId()?.getString() ?? "");
    // The same events sent again with the same expectation: the server's idempotent success.
    const after =
      expected.kind === "revision" ? expected.revision + 1n : expected.kind === "no_stream" ? 0n : -1n;
    if (after >= 0n && ids.length > 0 && stream.length >= Number(after) + ids.length) {
      if (ids.every((id, i) => stream[Number(after) + i]?.id === id)) {
        this.counts.idempotent += 1;
        const last = stream[Number(after) + ids.length - 1] as Stored;
        return { ok: true, revision: last.revision, index: last.index, again: true };
      }
    }
    const matches =
      expected.kind === "any" ||
      (expected.kind === "no_stream" && current < 0n) ||
      (expected.kind === "exists" && current >= 0n) ||
      (expected.kind === "revision" && current === expected.revision);
    if (!matches) {
      this.counts.wrongExpectedVersion += 1;
      return { ok: false, current };
    }
    const created = String(TICKS_AT_EPOCH + BigInt(Date.now()) * 10_000n);
    const added: Stored[] = [];
    for (const [i, p] of proposed.entries()) {
      const metadata: Array<[string, string]> = [];
      p.getMetadataMap().forEach((v, k) => {
        if (k === "type" || k === "content-type") metadata.push([k, v]);
      });
      metadata.push(["created", created]);
      const e: Stored = {
        stream: name,
        revision: BigInt(stream.length),
        index: this.all.length,
        id: ids[i] as string,
        metadata,
        customMetadata: p.getCustomMetadata_asU8(),
        data: p.getData_asU8(),
      };
      stream.push(e);
      this.all.push(e);
      added.push(e);
    }
    this.streams.set(name, stream);
    for (const l of this.live) {
      for (const e of added) if (l.stream === null || l.stream === name) l.call.write(this.eventResp(e));
    }
    const last = added.at(-1);
    return { ok: true, revision: last?.revision ?? current, index: last?.index ?? -1, again: false };
  }

  /** Whether to answer an append that went in as if its answer were lost. */
  private loseAnswer(): boolean {
    if (this.loseAnswers <= 0) return false;
    this.loseAnswers -= 1;
    this.counts.failed += 1;
    return true;
  }

  /** The client-streaming append: options, then the events, one answer. */
  private append(call: grpc.ServerReadableStream<AppendReq, AppendResp>, cb: grpc.sendUnaryData<AppendResp>) {
    const messages: AppendReq[] = [];
    call.on("data", (m: AppendReq) => messages.push(m));
    call.on("error", () => {});
    call.on("end", () => {
      const fault = this.fault();
      if (fault) return cb(fault);
      this.counts.appends += 1;
      const options = messages[0]?.getOptions();
      if (!options) return cb({ code: grpc.status.INVALID_ARGUMENT, details: "no options" });
      const name = Buffer.from(options.getStreamIdentifier()?.getStreamName_asU8() ?? []).toString("utf8");
      const C = pb.AppendReq.Options.ExpectedStreamRevisionCase;
      const kind = options.getExpectedStreamRevisionCase();
      const expected: Expected =
        kind === C.REVISION
          ? { kind: "revision", revision: BigInt(options.getRevision()) }
          : kind === C.NO_STREAM
            ? { kind: "no_stream" }
            : kind === C.STREAM_EXISTS
              ? { kind: "exists" }
              : { kind: "any" };
      const proposed = messages
        .slice(1)
        .map((m) => m.getProposedMessage())
        .filter((p) => p !== undefined) as unknown as Proposed[];
      const outcome = this.apply(name, expected, proposed);
      const resp = new pb.AppendResp();
      if (!outcome.ok) {
        const w = new pb.AppendResp.WrongExpectedVersion();
        if (outcome.current < 0n) w.setCurrentNoStream(new shared.Empty());
        else w.setCurrentRevision(String(outcome.current));
        if (expected.kind === "revision") w.setExpectedRevision(String(expected.revision));
        else if (expected.kind === "no_stream") w.setExpectedNoStream(new shared.Empty());
        else if (expected.kind === "exists") w.setExpectedStreamExists(new shared.Empty());
        else w.setExpectedAny(new shared.Empty());
        resp.setWrongExpectedVersion(w);
        return cb(null, resp);
      }
      if (!outcome.again && this.loseAnswer())
        return cb({ code: grpc.status.UNAVAILABLE, details: "stand-in: answer lost" });
      const ok = new pb.AppendResp.Success();
      if (outcome.revision < 0n) ok.setNoStream(new shared.Empty());
      else ok.setCurrentRevision(String(outcome.revision));
      const p = new pb.AppendResp.Position();
      p.setCommitPosition(outcome.index < 0 ? "0" : positionOf(outcome.index));
      p.setPreparePosition(outcome.index < 0 ? "0" : positionOf(outcome.index));
      ok.setPosition(p);
      resp.setSuccess(ok);
      return cb(null, resp);
    });
  }

  /**
   * The bidirectional batch append the client prefers when the server lists it: requests
   * carry a correlation id, options in the first, events in any number, the last `isFinal`;
   * each append gets one answer on the same call, which stays open for the next.
   */
  private batchAppend(call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>): void {
    const open = new Map<
      string,
      { options: BatchAppendReq["getOptions"] extends () => infer O ? O : never; proposed: Proposed[] }
    >();
    call.on("error", () => {});
    call.on("end", () => call.end());
    call.on("data", (req: BatchAppendReq) => {
      const cid = req.getCorrelationId()?.getString() ?? "";
      let entry = open.get(cid);
      if (!entry) {
        entry = { options: req.getOptions(), proposed: [] };
        open.set(cid, entry);
      }
      entry.proposed.push(...(req.getProposedMessagesList() as unknown as Proposed[]));
      if (!req.getIsFinal()) return;
      open.delete(cid);
      const fault = this.fault();
      if (fault) {
        call.emit("error", fault);
        return;
      }
      this.counts.batchAppends += 1;
      const options = entry.options;
      const ident = options?.getStreamIdentifier();
      const name = Buffer.from(ident?.getStreamName_asU8() ?? []).toString("utf8");
      const C = pb.BatchAppendReq.Options.ExpectedStreamPositionCase;
      const kind = options?.getExpectedStreamPositionCase();
      const expected: Expected =
        kind === C.STREAM_POSITION
          ? { kind: "revision", revision: BigInt(options?.getStreamPosition() ?? "0") }
          : kind === C.NO_STREAM
            ? { kind: "no_stream" }
            : kind === C.STREAM_EXISTS
              ? { kind: "exists" }
              : { kind: "any" };
      const outcome = this.apply(name, expected, entry.proposed);
      const resp = new pb.BatchAppendResp();
      resp.setCorrelationId(req.getCorrelationId());
      resp.setStreamIdentifier(ident);
      if (!outcome.ok) {
        const w = new shared.WrongExpectedVersion();
        if (outcome.current < 0n) w.setCurrentNoStream(new shared.Empty());
        else w.setCurrentStreamRevision(String(outcome.current));
        if (expected.kind === "revision") w.setExpectedStreamPosition(String(expected.revision));
        else if (expected.kind === "no_stream") w.setExpectedNoStream(new shared.Empty());
        else if (expected.kind === "exists") w.setExpectedStreamExists(new shared.Empty());
        else w.setExpectedAny(new shared.Empty());
        const any = new Any();
        any.pack(w.serializeBinary(), "event_store.client.WrongExpectedVersion");
        const st = new status.Status();
        st.setCode(9); // FAILED_PRECONDITION, as the server answers
        st.setMessage("WrongExpectedVersion");
        st.setDetails(any as never);
        resp.setError(st);
        call.write(resp);
        return;
      }
      if (!outcome.again && this.loseAnswer()) {
        call.emit("error", { code: grpc.status.UNAVAILABLE, details: "stand-in: answer lost" });
        return;
      }
      const ok = new pb.BatchAppendResp.Success();
      if (outcome.revision < 0n) ok.setNoStream(new shared.Empty());
      else ok.setCurrentRevision(String(outcome.revision));
      const p = new shared.AllStreamPosition();
      p.setCommitPosition(outcome.index < 0 ? "0" : positionOf(outcome.index));
      p.setPreparePosition(outcome.index < 0 ? "0" : positionOf(outcome.index));
      ok.setPosition(p);
      resp.setSuccess(ok);
      call.write(resp);
    });
  }

  private eventResp(e: Stored): ReadResp {
    const r = new pb.ReadResp.ReadEvent.RecordedEvent();
    const id = new shared.UUID();
    id.setString(e.id);
    r.setId(id);
    const ident = new shared.StreamIdentifier();
    ident.setStreamName(Buffer.from(e.stream, "utf8"));
    r.setStreamIdentifier(ident);
    r.setStreamRevision(String(e.revision));
    r.setCommitPosition(positionOf(e.index));
    r.setPreparePosition(positionOf(e.index));
    const map = r.getMetadataMap();
    for (const [k, v] of e.metadata) map.set(k, v);
    r.setCustomMetadata(e.customMetadata);
    r.setData(e.data);
    const read = new pb.ReadResp.ReadEvent();
    read.setEvent(r);
    read.setCommitPosition(positionOf(e.index));
    const resp = new pb.ReadResp();
    resp.setEvent(read);
    return resp;
  }

  private read(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const fault = this.fault();
    if (fault) {
      call.emit("error", fault);
      return;
    }
    const options = call.request.getOptions();
    if (!options) {
      call.emit("error", { code: grpc.status.INVALID_ARGUMENT, details: "no options" });
      return;
    }
    const backwards = options.getReadDirection() === pb.ReadReq.Options.ReadDirection.BACKWARDS;
    const count = options.hasCount() ? Number(BigInt(options.getCount())) : Number.MAX_SAFE_INTEGER;
    const subscribe = options.hasSubscription();
    let name: string | null = null;
    let events: Stored[];
    /** The first index (into `events`) to send, forwards; or the last, backwards. */
    let from: number;
    if (options.hasStream()) {
      const so = options.getStream() as InstanceType<StreamsPb["ReadReq"]["Options"]["StreamOptions"]>;
      name = Buffer.from(so.getStreamIdentifier()?.getStreamName_asU8() ?? []).toString("utf8");
      events = this.streams.get(name) ?? [];
      if (so.hasStart()) from = backwards ? -1 : 0;
      else if (so.hasEnd()) from = backwards ? events.length - 1 : events.length;
      else {
        const rev = Number(BigInt(so.getRevision()));
        // A subscription from a revision starts after it; a read starts at it.
        from = subscribe ? rev + 1 : rev;
      }
      if (!subscribe && events.length === 0) {
        const resp = new pb.ReadResp();
        const nf = new pb.ReadResp.StreamNotFound();
        nf.setStreamIdentifier(so.getStreamIdentifier());
        resp.setStreamNotFound(nf);
        call.write(resp);
        call.end();
        this.counts.reads += 1;
        return;
      }
    } else {
      const ao = options.getAll() as InstanceType<StreamsPb["ReadReq"]["Options"]["AllOptions"]>;
      events = this.all;
      if (ao.hasStart()) from = backwards ? -1 : 0;
      else if (ao.hasEnd()) from = backwards ? events.length - 1 : events.length;
      else {
        const at = indexOfPosition(ao.getPosition()?.getCommitPosition() ?? "0");
        from = subscribe ? at + 1 : backwards ? at - 1 : Math.max(at, 0);
      }
    }
    if (!subscribe) {
      this.counts.reads += 1;
      let sent = 0;
      if (backwards)
        for (let i = Math.min(from, events.length - 1); i >= 0 && sent < count; i--, sent++)
          call.write(this.eventResp(events[i] as Stored));
      else
        for (let i = Math.max(from, 0); i < events.length && sent < count; i++, sent++)
          call.write(this.eventResp(events[i] as Stored));
      call.end();
      return;
    }
    this.counts.subscriptions += 1;
    const confirm = new pb.ReadResp();
    const c = new pb.ReadResp.SubscriptionConfirmation();
    c.setSubscriptionId(`stand-in-${this.counts.subscriptions}`);
    confirm.setConfirmation(c);
    call.write(confirm);
    for (let i = Math.max(from, 0); i < events.length; i++) call.write(this.eventResp(events[i] as Stored));
    const caughtUp = new pb.ReadResp();
    caughtUp.setCaughtUp(new pb.ReadResp.CaughtUp());
    call.write(caughtUp);
    const live: Live = { stream: name, call };
    this.live.add(live);
    const drop = () => this.live.delete(live);
    call.on("cancelled", drop);
    call.on("close", drop);
    call.on("error", drop);
  }
}
