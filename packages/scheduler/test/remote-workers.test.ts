import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { type CommandSink, catchUp, LeaseBook, RemoteWorkers } from "@chronolog/scheduler";
import type { CommandsEvent, RunCommand } from "@chronolog/worker";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silent } from "./harness.js";

const register = (id: string, queues: string[], capacity = 2) => ({
  protocol: 1,
  id,
  host: "h",
  queues,
  capacity,
  version: "test",
  running: [],
});

const run = (token: string, queue: string): RunCommand => ({
  kind: "run",
  instanceStream: `instance-p/a/t/ALL@${token}`,
  taskKey: "p/a/t/ALL",
  logicalDate: "2026-12-01T00:00:00.000Z",
  attempt: 1,
  token,
  operator: { type: "noop" },
  leaseSeconds: 30,
  queue,
});

/** A command stream that takes batches (or, `stalled`, never finishes writing one). */
function sink(stalled = false): CommandSink & { batches: CommandsEvent[]; closed: string | null } {
  const s = {
    batches: [] as CommandsEvent[],
    closed: null as string | null,
    send: (batch: CommandsEvent) => {
      s.batches.push(batch);
      return stalled ? new Promise<void>(() => {}) : Promise.resolve();
    },
    ping: () => Promise.resolve(),
    close: (reason: string) => {
      s.closed = reason;
    },
  };
  return s;
}

const tick = () => new Promise((r) => setImmediate(r));

/** Attempt `token` of `stream` recorded in the projection's workers as intended for `queue`. */
function intended(
  projection: SchedulerProjection,
  stream: string,
  token: string,
  { task = "p/a/t/ALL", logicalDate = token, queue = "gpu" } = {},
): void {
  projection.workers.applyAttempt(
    {
      type: "DispatchIntended",
      streamId: stream,
      data: { token, attempt: 1 },
      metadata: { recordedAt: new Date().toISOString() },
    } as never,
    task,
    logicalDate,
    queue,
  );
}

describe("RemoteWorkers: the scheduler's side of remote workers", () => {
  let dir: string;
  let log: EventLog;
  let workers: RemoteWorkers;
  const options = (o: object = {}) => ({
    log,
    projection: new SchedulerProjection(),
    logger: silent,
    schedulerId: "s1",
    outputRoot: join(dir, "output"),
    outputMaxBytes: 1024,
    stateFile: join(dir, "remote-workers.json"),
    ...o,
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "remote-workers-"));
    log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  });
  afterEach(async () => {
    await workers?.close();
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("given attempts a worker never started, when it says goodbye, then each ends interrupted, to run again at once", async () => {
    const projection = new SchedulerProjection();
    workers = new RemoteWorkers(options({ projection }));
    const key = { project: "p", account: "a", name: "t", partition: "ALL" };
    const day = (d: number) => `2026-12-0${d}T00:00:00.000Z`;
    const command = (token: string, d: number): RunCommand => ({
      ...run(token, "gpu"),
      instanceStream: `instance-p/a/t/ALL@${day(d)}`,
      logicalDate: day(d),
    });
    for (const [token, d] of [
      ["unstarted-1", 1],
      ["started-2", 2],
    ] as const)
      await log.append(
        `instance-p/a/t/ALL@${day(d)}`,
        [
          {
            type: "DispatchIntended",
            data: {
              key,
              logicalDate: day(d),
              attempt: 1,
              token,
              operator: { type: "noop" },
              idempotent: false,
              leaseSeconds: 30,
            },
          },
        ],
        { expectedRevision: "no_stream" },
      );
    await log.append(
      `instance-p/a/t/ALL@${day(2)}`,
      [
        {
          type: "AttemptStarted",
          data: { attempt: 1, token: "started-2", workerId: "a", leaseExpiresAt: day(3) },
        },
      ],
      { expectedRevision: 0n },
    );
    await catchUp(log, projection);
    const a = await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    workers.attach(conn, sink());
    workers.dispatch([command("unstarted-1", 1), command("started-2", 2)]);
    await tick();
    const ends: string[] = [];
    workers.onReport((r) => {
      if (r.kind === "failed") ends.push(`${r.token} ${r.error.kind}: ${r.error.message}`);
    });
    await workers.goodbye(conn);
    // The one it started is its own to report (it did, before its goodbye, or its lease says).
    expect(ends).toEqual(["unstarted-1 interrupted: worker a stopped before starting it"]);
  });

  it("given workers of a queue, when attempts come, then the least loaded takes each, and the rest wait for a slot", async () => {
    workers = new RemoteWorkers(options());
    expect(workers.room("gpu")).toEqual({ connected: 0, busy: 0, slots: 0 });
    const a = await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    const b = await workers.register(register("b", ["gpu", "cpu"]), { tokenName: "t", queues: null });
    const sa = sink();
    const sb = sink();
    workers.attach(workers.connection("a", a.session), sa);
    workers.attach(workers.connection("b", b.session), sb);
    workers.dispatch(["1", "2", "3", "4", "5"].map((t) => run(t, "gpu")));
    await tick();
    const sent = (s: ReturnType<typeof sink>) =>
      s.batches.flatMap((x) => x.messages.map((m) => (m as RunCommand).token));
    expect(sent(sa).length + sent(sb).length).toBe(4);
    expect(sent(sa)).toHaveLength(2);
    // The fifth waits for a slot, and counts as busy.
    expect(workers.room("gpu")).toEqual({ connected: 2, busy: 5, slots: 4 });
    expect(await workers.query(["5"], 50)).toEqual(new Map([["5", "queue gpu"]]));
    const events = (await log.readAll()).map((e) => e.type);
    expect(events).toEqual(["WorkerConnected", "WorkerConnected"]);
  });

  it("given attempts waiting for a slot, when one is cancelled, then it alone ends, and the others still wait", async () => {
    workers = new RemoteWorkers(options());
    const a = await workers.register(register("a", ["gpu"], 1), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    const s = sink();
    workers.attach(conn, s);
    const failed: string[] = [];
    workers.onReport((r) => {
      if (r.kind === "failed") failed.push(`${r.token} ${r.error.message}`);
    });
    workers.dispatch(["1", "2", "3", "4"].map((t) => run(t, "gpu")));
    expect(["1", "2", "3", "4", "5"].map((t) => workers.holds(t))).toEqual([true, true, true, true, false]);
    expect(workers.cancel("3", "by hand")).toBe(true);
    expect(failed).toEqual(["3 cancelled: by hand"]);
    expect(workers.holds("3")).toBe(false);
    expect(workers.cancel("3", "again")).toBe(false);
    expect(workers.room("gpu")).toEqual({ connected: 1, busy: 3, slots: 1 });
    const end = (token: string) => ({
      kind: "succeeded" as const,
      token,
      attempt: 1,
      instanceStream: `instance-p/a/t/ALL@${token}`,
      workerId: "a",
      at: new Date().toISOString(),
      durationMs: 1,
      exitCode: 0,
      stdoutTail: "",
      stderrTail: "",
    });
    // (No attempt is current in this empty projection: the ends are refused, and free nothing.)
    expect((await workers.receive(conn, [end("1")])).refused).toHaveLength(1);
    expect(workers.room("gpu")).toMatchObject({ busy: 3 });
    await workers.close();
  });

  it("given a worker whose stream stalls, when more commands wait than the buffer holds, then it is dropped saying why", async () => {
    workers = new RemoteWorkers(options({ bufferMax: 3 }));
    const a = await workers.register(register("a", ["gpu"], 100), { tokenName: "t", queues: null });
    const s = sink(true);
    workers.attach(workers.connection("a", a.session), s);
    workers.dispatch([run("1", "gpu")]);
    await tick();
    workers.dispatch(["2", "3", "4", "5"].map((t) => run(t, "gpu")));
    await tick();
    await tick();
    expect(workers.connected).toBe(0);
    expect(s.closed).toMatch(/^fell behind: 4 commands waiting to be sent, more than the 3 a worker may$/);
    const last = (await log.readAll()).at(-1);
    expect(last?.type).toBe("WorkerDisconnected");
    expect((last?.data as { reason: string } | undefined)?.reason).toMatch(/^fell behind/);
  });

  it("given a token for some queues, when a worker asks for another, then it is refused and nothing is written", async () => {
    workers = new RemoteWorkers(options());
    await expect(
      workers.register(register("a", ["gpu", "cpu"]), { tokenName: "t", queues: ["gpu"] }),
    ).rejects.toThrow("token t may serve queue gpu: not cpu");
    await expect(
      workers.register(register("w123-1", ["gpu"]), { tokenName: "t", queues: null }),
    ).rejects.toThrow(/not one a remote worker may take/);
    expect(await log.readAll()).toEqual([]);
  });

  it("given workers left connected by a killed process, when the next starts, then they are recorded gone", async () => {
    const first = new RemoteWorkers(options());
    await first.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    // (The process dies: nothing closes it.) The next process is another scheduler id.
    workers = new RemoteWorkers(options({ schedulerId: "s2" }));
    expect(await workers.settleAtStart()).toBe(1);
    const events = await log.readAll();
    expect(events.map((e) => e.type)).toEqual(["WorkerConnected", "WorkerDisconnected"]);
    expect(events[1]?.data).toEqual({ worker: "a", reason: "scheduler restarted", scheduler: "s1" });
    expect(await workers.settleAtStart()).toBe(0);
  });

  it("given a worker already registered again with this process, when it settles, then that registration stays", async () => {
    const first = new RemoteWorkers(options());
    await first.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    workers = new RemoteWorkers(options({ schedulerId: "s2" }));
    await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    expect(await workers.settleAtStart()).toBe(0);
    expect((await log.readAll()).map((e) => e.type)).toEqual(["WorkerConnected", "WorkerConnected"]);
  });

  it("given an attempt current in the log that no connection holds, when a worker says it knows it, then it is adopted", async () => {
    const projection = new SchedulerProjection();
    // The attempt another scheduler gave, running (as the log says), not idempotent.
    const inst = {
      stream: "instance-p/a/t/ALL@x",
      idempotent: false,
      attempts: [{ token: "x", attempt: 1, status: "running" }],
    };
    (projection.instances as Map<string, unknown>).set(inst.stream, inst);
    // Of queue gpu, as its intent says; and "local", an attempt of the scheduler's own pool.
    intended(projection, inst.stream, "x");
    const local = {
      stream: "instance-p/a/l/ALL@x",
      attempts: [{ token: "local", attempt: 1, status: "running" }],
    };
    (projection.instances as Map<string, unknown>).set(local.stream, local);
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    const s = sink();
    workers.attach(conn, s);
    expect(workers.holds("x")).toBe(false);
    const asked = workers.query(["x", "gone", "local"], 5000);
    await tick();
    const query = s.batches.flatMap((b) => b.messages).find((m) => m.kind === "query");
    expect(query).toMatchObject({ tokens: ["x", "gone", "local"] });
    const requestId = (query as { requestId: string }).requestId;
    await workers.receive(conn, [
      { kind: "known", requestId, workerId: "a", running: ["x", "gone", "local"] },
    ]);
    // Its word counts for x alone: "gone" is no current attempt, "local" one of the own pool's.
    expect(await asked).toEqual(new Map([["x", "a"]]));
    expect(workers.holds("x")).toBe(true);
    expect(workers.holds("gone")).toBe(false);
    expect(workers.holds("local")).toBe(false);
    expect(workers.room("gpu")).toMatchObject({ busy: 1 });
    // Its start is on record: it may run (the scheduler that gave it may have died before saying so).
    await tick();
    expect(s.batches.flatMap((b) => b.messages).filter((m) => m.kind === "proceed")).toEqual([
      { kind: "proceed", token: "x" },
    ]);
    const heartbeat = {
      kind: "heartbeat" as const,
      token: "x",
      attempt: 1,
      instanceStream: inst.stream,
      workerId: "a",
      at: new Date().toISOString(),
    };
    expect(await workers.receive(conn, [heartbeat])).toEqual({
      accepted: 1,
      refused: [],
      now: expect.any(Number),
    });
  });

  it("given reports of a current attempt, when the worker posts them, then it is answered only once they are written", async () => {
    const projection = new SchedulerProjection();
    const inst = {
      stream: "instance-p/a/t/ALL@w",
      attempts: [{ token: "w", attempt: 1, status: "running" }],
    };
    (projection.instances as Map<string, unknown>).set(inst.stream, inst);
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    workers.attach(conn, sink());
    workers.dispatch([run("w", "gpu")]);
    // The scheduler's listener: the report's commit, which settles when the test says.
    let written = () => {};
    const commits: string[] = [];
    workers.onReport((r) => {
      commits.push(r.kind);
      return new Promise<void>((resolve) => {
        written = resolve;
      });
    });
    let answered = false;
    const answer = workers
      .receive(conn, [
        {
          kind: "heartbeat",
          token: "w",
          attempt: 1,
          instanceStream: inst.stream,
          workerId: "a",
          at: new Date().toISOString(),
        },
      ])
      .then((x) => {
        answered = true;
        return x;
      });
    for (let i = 0; i < 20; i++) await tick();
    expect(commits).toEqual(["heartbeat"]);
    // Answered now, a crash before the write would lose a report the worker no longer holds.
    expect(answered).toBe(false);
    written();
    expect(await answer).toEqual({ accepted: 1, refused: [], now: expect.any(Number) });
  });

  it("given attempts held by a worker, when it sends anything on its session, then every one's lease runs from then", async () => {
    const projection = new SchedulerProjection();
    // Adopted at registration: its lease is its instance's.
    const inst = {
      stream: "instance-p/a/t/ALL@z",
      leaseSeconds: 12,
      attempts: [{ token: "z", attempt: 1, status: "running" }],
    };
    (projection.instances as Map<string, unknown>).set(inst.stream, inst);
    intended(projection, inst.stream, "z");
    let clock = 1_000_000;
    const leases = new LeaseBook();
    workers = new RemoteWorkers(options({ projection, leases, now: () => clock }));
    const a = await workers.register(
      { ...register("a", ["gpu"], 4), running: ["z"] },
      { tokenName: "t", queues: null },
    );
    expect(a.adopted).toEqual(["z"]);
    expect(leases.peek("z")).toBe(1_000_000 + 12_000);
    const conn = workers.connection("a", a.session);
    workers.attach(conn, sink());
    workers.dispatch([run("g1", "gpu"), run("g2", "gpu")]);
    // An empty batch of reports (a keepalive) heard 3 s later: no heartbeat of any of them.
    clock += 3000;
    await workers.receive(workers.connection("a", a.session), []);
    expect(leases.peek("z")).toBe(1_003_000 + 12_000);
    expect(leases.peek("g1")).toBe(1_003_000 + 30_000);
    expect(leases.peek("g2")).toBe(1_003_000 + 30_000);
    // Another worker's request renews none of them.
    const b = await workers.register(register("b", ["gpu"]), { tokenName: "t", queues: null });
    clock += 5000;
    workers.connection("b", b.session);
    expect(leases.peek("g1")).toBe(1_003_000 + 30_000);
    // An attempt the worker has not spoken of for a whole lease (it reports it elsewhere now, or
    // lost it) is renewed by its requests no more: its lease runs out, and the loop asks.
    clock = 1_040_000;
    const heartbeat = (token: string) => ({
      kind: "heartbeat" as const,
      token,
      attempt: 1,
      instanceStream: `instance-p/a/t/ALL@${token}`,
      workerId: "a",
      at: new Date(clock).toISOString(),
    });
    (projection.instances as Map<string, unknown>).set("instance-p/a/t/ALL@g2", {
      stream: "instance-p/a/t/ALL@g2",
      attempts: [{ token: "g2", attempt: 1, status: "running" }],
    });
    await workers.receive(workers.connection("a", a.session), [heartbeat("g2")]);
    expect(leases.peek("g2")).toBe(1_040_000 + 30_000);
    expect(leases.peek("g1")).toBe(1_003_000 + 30_000);
    expect(leases.peek("z")).toBe(1_003_000 + 12_000);
  });

  it("given commands queued while a batch is being written, then the next batch carries when the oldest was queued; answers carry the clock", async () => {
    const projection = new SchedulerProjection();
    for (const token of ["g1", "g2", "g3"]) intended(projection, `instance-p/a/t/ALL@${token}`, token);
    let clock = 2_000_000;
    workers = new RemoteWorkers(options({ projection, now: () => clock }));
    const a = await workers.register(register("a", ["gpu"], 4), { tokenName: "t", queues: null });
    expect(a.now).toBe(2_000_000);
    const conn = workers.connection("a", a.session);
    // A stream whose writes finish when the test says (a link holding them up).
    const batches: CommandsEvent[] = [];
    const done: Array<() => void> = [];
    workers.attach(conn, {
      send: (batch) => {
        batches.push(batch);
        return new Promise<void>((r) => done.push(r));
      },
      ping: () => Promise.resolve(),
      close: () => {},
    });
    workers.dispatch([run("g1", "gpu")]);
    await tick();
    clock += 1500;
    workers.dispatch([run("g2", "gpu")]);
    clock += 1500;
    workers.dispatch([run("g3", "gpu")]);
    await tick();
    expect(batches.map((b) => b.at)).toEqual([2_000_000]);
    done.shift()?.();
    await tick();
    // g2 and g3 in one batch, stamped when g2 was queued: the worker reckons from there how late
    // the batch came.
    expect(batches.map((b) => [b.at, b.messages.map((m) => (m as RunCommand).token)])).toEqual([
      [2_000_000, ["g1"]],
      [2_001_500, ["g2", "g3"]],
    ]);
    expect((await workers.receive(conn, [])).now).toBe(2_003_000);
  });

  it("given a start its commit tells to stop (the attempt given up meanwhile), then the answer refuses it", async () => {
    const projection = new SchedulerProjection();
    const inst = {
      stream: "instance-p/a/t/ALL@g1",
      leaseSeconds: 30,
      attempts: [{ token: "g1", attempt: 1, status: "queued" }],
    };
    (projection.instances as Map<string, unknown>).set(inst.stream, inst);
    intended(projection, inst.stream, "g1");
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(register("a", ["gpu"], 4), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    workers.attach(conn, sink());
    workers.dispatch([run("g1", "gpu")]);
    // The projection still shows it queued, so it is accepted here; its commit finds it no longer
    // current (as the scheduler's report decider settles: the tokens it told to stop).
    workers.onReport(() => Promise.resolve({ stopped: new Set(["g1"]) }));
    const started = {
      kind: "started" as const,
      token: "g1",
      attempt: 1,
      instanceStream: inst.stream,
      workerId: "a",
      at: new Date().toISOString(),
      pid: 1,
    };
    const answer = await workers.receive(conn, [started]);
    expect(answer.accepted).toBe(0);
    expect(answer.refused).toEqual([
      { kind: "started", token: "g1", reason: "the attempt is no longer current" },
    ]);
  });

  it("given attempts waiting for a slot, when one is ended in the log meanwhile, then it is never given", async () => {
    const projection = new SchedulerProjection();
    for (const token of ["busy", "w1", "w2"])
      (projection.instances as Map<string, unknown>).set(`instance-p/a/t/ALL@${token}`, {
        stream: `instance-p/a/t/ALL@${token}`,
        attempts: [{ token, attempt: 1, status: token === "busy" ? "running" : "queued" }],
      });
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(register("a", ["gpu"], 1), { tokenName: "t", queues: null });
    const s = sink();
    workers.attach(workers.connection("a", a.session), s);
    workers.dispatch([run("busy", "gpu"), run("w1", "gpu"), run("w2", "gpu")]);
    // w1 is abandoned and retried (by an operator, or the scheduler its shard went to) while it waits.
    (projection.instances as Map<string, unknown>).set("instance-p/a/t/ALL@w1", {
      stream: "instance-p/a/t/ALL@w1",
      attempts: [
        { token: "w1", attempt: 1, status: "abandoned" },
        { token: "w1-retry", attempt: 2, status: "queued" },
      ],
    });
    await workers.receive(workers.connection("a", a.session), [
      {
        kind: "succeeded",
        token: "busy",
        attempt: 1,
        instanceStream: "instance-p/a/t/ALL@busy",
        workerId: "a",
        at: new Date().toISOString(),
        durationMs: 1,
      } as never,
    ]);
    await tick();
    const given = s.batches.flatMap((b) => b.messages.map((m) => (m as RunCommand).token));
    expect(given).toEqual(["busy", "w2"]);
    expect(await workers.query(["w1"], 50)).toEqual(new Map());
  });

  it("given a question that timed out, when the worker's answer comes late, then what it knows is adopted all the same", async () => {
    const projection = new SchedulerProjection();
    const inst = {
      stream: "instance-p/a/t/ALL@y",
      attempts: [{ token: "y", attempt: 1, status: "running" }],
    };
    (projection.instances as Map<string, unknown>).set(inst.stream, inst);
    intended(projection, inst.stream, "y");
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    workers.attach(conn, sink());
    expect(await workers.query(["y"], 1)).toEqual(new Map());
    await workers.receive(conn, [{ kind: "known", requestId: "r1", workerId: "a", running: ["y"] }]);
    expect(workers.holds("y")).toBe(true);
  });

  it("given attempts announced at reconnection, when their start is durable, then they are adopted and told to proceed; the one never started ends at the goodbye", async () => {
    // The projection as the restarted scheduler has it: "started" recorded, "waiting" not yet.
    const projection = new SchedulerProjection();
    const instance = (token: string, status: string) =>
      ({
        stream: `instance-p/a/${token}/ALL@d`,
        idempotent: false,
        attempts: [{ token, attempt: 1, status }],
      }) as never;
    // (Keyed by their streams, as the projection keys them: the attempts are looked up by them.)
    projection.instances.set("instance-p/a/started/ALL@d", instance("started", "running"));
    projection.instances.set("instance-p/a/waiting/ALL@d", instance("waiting", "queued"));
    // Both of queue gpu, as their intents say.
    for (const token of ["started", "waiting"])
      intended(projection, `instance-p/a/${token}/ALL@d`, token, {
        task: `p/a/${token}/ALL`,
        logicalDate: "d",
      });
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(
      { ...register("a", ["gpu"]), running: ["started", "waiting", "gone"] },
      { tokenName: "t", queues: null },
    );
    expect(a.adopted).toEqual(["started", "waiting"]);
    expect(a.stop).toEqual(["gone"]);
    const s = sink();
    workers.attach(workers.connection("a", a.session), s);
    await tick();
    // Without it, a non-idempotent attempt would wait for a proceed sent by the earlier process.
    expect(s.batches.flatMap((b) => b.messages)).toEqual([{ kind: "proceed", token: "started" }]);
    // Its goodbye ends the adopted attempt it never started, as one given here, to run again at
    // once rather than a lease later; the started one is its own to report.
    const ends: string[] = [];
    workers.onReport((r) => {
      if (r.kind === "failed")
        ends.push(`${r.token} ${r.instanceStream} ${r.error.kind}: ${r.error.message}`);
    });
    await workers.goodbye(workers.connection("a", a.session));
    expect(ends).toEqual([
      "waiting instance-p/a/waiting/ALL@d interrupted: worker a stopped before starting it",
    ]);
  });
  it("given an attempt the log has ended, when its worker's heartbeat comes, then it is refused and the worker told to stop it", async () => {
    const projection = new SchedulerProjection();
    const inst = {
      stream: "instance-p/a/t/ALL@z",
      idempotent: false,
      attempts: [{ token: "z", attempt: 1, status: "abandoned" }],
    };
    (projection.instances as Map<string, unknown>).set(inst.stream, inst);
    workers = new RemoteWorkers(options({ projection }));
    const a = await workers.register(register("a", ["gpu"]), { tokenName: "t", queues: null });
    const conn = workers.connection("a", a.session);
    const s = sink();
    workers.attach(conn, s);
    const heartbeat = (token: string, stream: string) => ({
      kind: "heartbeat" as const,
      token,
      attempt: 1,
      instanceStream: stream,
      workerId: "a",
      at: new Date().toISOString(),
    });
    const answer = await workers.receive(conn, [
      heartbeat("z", inst.stream),
      // A token the log here does not show: refused, but no ground to stop it.
      heartbeat("ahead", "instance-p/a/t/ALL@ahead"),
    ]);
    expect(answer.refused.map((r) => r.token)).toEqual(["z", "ahead"]);
    await tick();
    expect(s.batches.flatMap((b) => b.messages)).toEqual([
      { kind: "cancel", token: "z", reason: "the attempt is no longer current" },
    ]);
  });
});
