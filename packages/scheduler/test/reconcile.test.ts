import { currentAttempt, SchedulerProjection } from "@chronolog/core";
import { Reconciler } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, key, LATEST, stream, until } from "./harness.js";

let h: Harness;
afterEach(async () => h?.close());

const intent = (name: string, attempt: number, token: string, idempotent: boolean) => ({
  type: "DispatchIntended",
  data: {
    key: key(name),
    logicalDate: LATEST,
    attempt,
    token,
    operator: { type: "noop" },
    idempotent,
    leaseSeconds: 1,
  },
});

/** The projection of what the log holds now. */
async function projected(): Promise<SchedulerProjection> {
  const projection = new SchedulerProjection();
  for (const e of await h.log.readAll()) projection.apply(e);
  return projection;
}

/** Workers that know no attempt: what they are asked is kept, and `meanwhile` runs as they are. */
function unknowingWorkers(meanwhile: () => void = () => {}) {
  const asked: string[][] = [];
  const dispatcher = {
    dispatch() {},
    onReport: () => () => {},
    query: async (tokens: readonly string[]) => {
      asked.push([...tokens]);
      meanwhile();
      return new Map<string, string>();
    },
    cancel() {},
    proceed() {},
  };
  return { dispatcher, asked };
}

async function events(name: string) {
  return (await h.log.readStream(stream(name))).map((e) => e.type);
}

describe("reconcile: an intent never confirmed by a worker", () => {
  it("abandons the attempt and runs a new one with a new token, once", async () => {
    h = await harness([{ name: "lost_dispatch", idempotent: false }]);
    // A scheduler that wrote its intent and died before dispatching.
    await h.log.append(stream("lost_dispatch"), [intent("lost_dispatch", 1, "token-never-sent-1", false)], {
      expectedRevision: "no_stream",
    });
    await h.start();
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/lost_dispatch/ALL")?.prevIntervalStart === LATEST,
    );
    const evs = await h.log.readStream(stream("lost_dispatch"));
    expect(evs.map((e) => e.type)).toEqual([
      "DispatchIntended",
      "AttemptAbandoned",
      "DispatchIntended",
      "AttemptStarted",
      "AttemptSucceeded",
    ]);
    expect(evs[1]?.data).toMatchObject({ attempt: 1, token: "token-never-sent-1", retry: true });
    expect(evs[2]?.data).toMatchObject({ attempt: 2 });
    expect((evs[2]?.data as { token: string } | undefined)?.token).not.toBe("token-never-sent-1");
    expect(h.effects("lost_dispatch")).toBe(1);
  });

  it("two reconcilers at once write one decision: the other loses the compare-and-set", async () => {
    h = await harness([{ name: "raced", idempotent: false }]);
    await h.log.append(stream("raced"), [intent("raced", 1, "token-raced-0001", false)], {
      expectedRevision: "no_stream",
    });
    await h.start({ reconcile: false });
    const second = new Reconciler({
      log: h.log,
      projection: h.projection,
      dispatcher: h.pool,
      actor: "reconciler:second",
      confirmGraceMs: 0,
    });
    const first = h.reconciler as Reconciler;
    // Both past the grace an intent gets (counted from when it was recorded).
    await new Promise((r) => setTimeout(r, 350));
    const [a, b] = await Promise.all([first.pass(), second.pass()]);
    expect(a.written + b.written).toBe(1);
    expect(a.conflicts + b.conflicts).toBe(1);
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/raced/ALL")?.prevIntervalStart === LATEST,
    );
    const types = await events("raced");
    expect(types.filter((t) => t === "AttemptAbandoned")).toHaveLength(1);
    expect(types.filter((t) => t === "DispatchIntended")).toHaveLength(2);
    expect(h.effects("raced")).toBe(1);
  });
});

describe("reconcile: the dispatch times it keeps", () => {
  it("keeps one only while its attempt may wait to be confirmed, not ten graces for every attempt", async () => {
    h = await harness([{ name: "held", idempotent: true }]);
    await h.log.append(stream("held"), [intent("held", 1, "token-held-0001", true)], {
      expectedRevision: "no_stream",
    });
    const projection = await projected();
    let now = Date.now();
    const r = new Reconciler({
      log: h.log,
      projection,
      dispatcher: unknowingWorkers().dispatcher,
      actor: "reconciler:test",
      confirmGraceMs: 60_000,
      now: () => now,
    });
    // One attempt queued in the projection; one that started, ended and left it meanwhile.
    r.noteDispatched(["token-held-0001", "token-gone-0001"]);
    await r.pass();
    expect(r.dispatchTimesHeld).toBe(2);
    // Past one grace: the queued attempt's time is kept, the other's dropped (it was kept for
    // ten graces, whatever became of its attempt).
    now += 61_000;
    await r.pass();
    expect(r.dispatchTimesHeld).toBe(1);
    // Past ten graces, every time is dropped, as before.
    now += 10 * 60_000;
    await r.pass();
    expect(r.dispatchTimesHeld).toBe(0);
  });
});

describe("reconcile: a running attempt whose lease expired", () => {
  const started = (token: string, workerId: string) => ({
    type: "AttemptStarted",
    data: { attempt: 1, token, workerId, leaseExpiresAt: new Date(Date.now() + 1000).toISOString() },
  });

  it("retries an idempotent task once no worker knows the attempt", async () => {
    h = await harness([{ name: "idem", idempotent: true, lease: 1 }]);
    const prefix = "tlease";
    await h.log.append(
      stream("idem"),
      [intent("idem", 1, "token-partitioned-1", true), started("token-partitioned-1", `${prefix}-99`)],
      { expectedRevision: "no_stream" },
    );
    const t0 = Date.now();
    await h.start({ poolPrefix: prefix });
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/idem/ALL")?.prevIntervalStart === LATEST,
    );
    // A restarted reconciler gave the attempt a fresh grace period (1 s lease) before acting.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    // (The retry's start is its own event unless it ended in the same breath: idempotent attempts
    // may record their start inside their outcome.)
    expect((await events("idem")).filter((t, i) => !(t === "AttemptStarted" && i > 4))).toEqual([
      "DispatchIntended",
      "AttemptStarted",
      "AttemptHeartbeatExpired",
      "AttemptAbandoned",
      "DispatchIntended",
      "AttemptSucceeded",
    ]);
  });

  it("never starts a second attempt of a task that is not idempotent: it waits for an operator", async () => {
    h = await harness([{ name: "once", idempotent: false, lease: 1 }]);
    const prefix = "tonce";
    await h.log.append(
      stream("once"),
      [intent("once", 1, "token-partitioned-2", false), started("token-partitioned-2", `${prefix}-99`)],
      { expectedRevision: "no_stream" },
    );
    await h.start({ poolPrefix: prefix });
    await until("the lease to be marked expired", () =>
      currentAttempt(h.projection.instances.get(stream("once")) ?? ({ attempts: [] } as never))?.status ===
      "lease_expired"
        ? true
        : undefined,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(await events("once")).toEqual(["DispatchIntended", "AttemptStarted", "AttemptHeartbeatExpired"]);
    expect(h.effects("once")).toBe(0);
    // The operator decides: abandon and retry.
    const inst = h.projection.instances.get(stream("once"));
    await h.log.append(
      stream("once"),
      [
        {
          type: "AttemptAbandoned",
          data: {
            attempt: 1,
            token: "token-partitioned-2",
            reason: "checked by hand",
            by: "operator:test",
            retry: true,
          },
        },
      ],
      { expectedRevision: inst?.revision ?? 0n },
    );
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/once/ALL")?.prevIntervalStart === LATEST,
    );
    expect(h.effects("once")).toBe(1);
  });

  it("a worker of an earlier scheduler process is gone: its attempt is interrupted, run again only if idempotent", async () => {
    h = await harness([
      { name: "idem2", idempotent: true },
      { name: "nonidem2", idempotent: false },
    ]);
    for (const [name, idem] of [
      ["idem2", true],
      ["nonidem2", false],
    ] as const) {
      await h.log.append(
        stream(name),
        [intent(name, 1, `token-old-${name}`, idem), started(`token-old-${name}`, "wOLD-1")],
        {
          expectedRevision: "no_stream",
        },
      );
    }
    await h.start({ poolPrefix: "wNEW" });
    await until(
      "the idempotent task to finish",
      () => h.projection.tasks.get("p/a/idem2/ALL")?.prevIntervalStart === LATEST,
    );
    await until(
      "the other task to fail",
      () => h.projection.tasks.get("p/a/nonidem2/ALL")?.failure ?? undefined,
    );
    expect(h.effects("idem2")).toBe(1);
    expect(h.effects("nonidem2")).toBe(0);
    const failure = h.projection.tasks.get("p/a/nonidem2/ALL")?.failure;
    expect(failure?.reason).toMatch(/interrupted: worker wOLD-1 belonged to an earlier scheduler process/);
  });
});

describe("reconcile: settling at start-up what an earlier process left in flight", () => {
  const startedOn = (token: string, workerId: string) => ({
    type: "AttemptStarted",
    data: { attempt: 1, token, workerId, leaseExpiresAt: new Date(Date.now() + 60_000).toISOString() },
  });

  it("reports its running attempts interrupted and abandons its intents, with no pass", async () => {
    h = await harness([
      { name: "idem3", idempotent: true },
      { name: "once3", idempotent: false },
      { name: "unsent3", idempotent: false },
    ]);
    for (const [name, idem] of [
      ["idem3", true],
      ["once3", false],
    ] as const) {
      await h.log.append(
        stream(name),
        [intent(name, 1, `token-old-${name}`, idem), startedOn(`token-old-${name}`, "wOLD-1")],
        { expectedRevision: "no_stream" },
      );
    }
    // Recorded just now: a pass would leave it its grace to be confirmed.
    await h.log.append(stream("unsent3"), [intent("unsent3", 1, "token-old-unsent3", false)], {
      expectedRevision: "no_stream",
    });
    await h.start({ poolPrefix: "wNEW", reconcile: false });
    const settled = await (h.reconciler as Reconciler).settleAtStart();
    expect([...settled.lost].sort()).toEqual(["token-old-idem3", "token-old-once3"]);
    expect(settled.abandoned).toBe(1);
    for (const name of ["idem3", "unsent3"])
      await until(
        `${name} to finish`,
        () => h.projection.tasks.get(`p/a/${name}/ALL`)?.prevIntervalStart === LATEST,
      );
    await until("once3 to fail", () => h.projection.tasks.get("p/a/once3/ALL")?.failure ?? undefined);
    expect(h.effects("idem3")).toBe(1);
    expect(h.effects("unsent3")).toBe(1);
    expect(h.effects("once3")).toBe(0);
    expect(await events("unsent3")).toEqual([
      "DispatchIntended",
      "AttemptAbandoned",
      "DispatchIntended",
      "AttemptStarted",
      "AttemptSucceeded",
    ]);
    expect((h.reconciler as Reconciler).totals.passes).toBe(0);
  });
});

describe("reports", () => {
  it("a report delivered twice is applied once; the second is rejected and recorded", async () => {
    h = await harness([{ name: "dup", idempotent: true }]);
    await h.start();
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/dup/ALL")?.prevIntervalStart === LATEST,
    );
    const evs = await h.log.readStream(stream("dup"));
    const succeeded = evs.find((e) => e.type === "AttemptSucceeded");
    const token = (succeeded?.data as { token: string } | undefined)?.token;
    // Deliver the same success again, as a retried network message would.
    (h.pool as unknown as { emit(r: unknown[]): void }).emit([
      {
        kind: "succeeded",
        token,
        attempt: 1,
        instanceStream: stream("dup"),
        workerId: "w-x",
        at: new Date().toISOString(),
        durationMs: 1,
        exitCode: 0,
        stdoutTail: "",
        stderrTail: "",
      },
    ]);
    await new Promise((r) => setTimeout(r, 300));
    const after = await h.log.readStream(stream("dup"));
    const rejected = after.filter((e) => e.type === "CompletionRejected");
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.data).toMatchObject({ reason: "already_terminal", report: "succeeded", token });
    expect(after.filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
  });

  it("a stale report from an attempt that was replaced is rejected, never applied", async () => {
    h = await harness([{ name: "stale", idempotent: true }]);
    await h.log.append(stream("stale"), [intent("stale", 1, "token-first-0001", true)], {
      expectedRevision: "no_stream",
    });
    await h.start();
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/stale/ALL")?.prevIntervalStart === LATEST,
    );
    (h.pool as unknown as { emit(r: unknown[]): void }).emit([
      {
        kind: "failed",
        token: "token-first-0001",
        attempt: 1,
        instanceStream: stream("stale"),
        workerId: "w-late",
        at: new Date().toISOString(),
        durationMs: 5,
        exitCode: 1,
        error: { kind: "exit_code", message: "exit code 1" },
        stdoutTail: "",
        stderrTail: "",
      },
    ]);
    await new Promise((r) => setTimeout(r, 300));
    const after = await h.log.readStream(stream("stale"));
    const rejected = after.filter((e) => e.type === "CompletionRejected");
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.data).toMatchObject({ reason: "stale_token", token: "token-first-0001" });
    expect(after.some((e) => e.type === "AttemptFailed")).toBe(false);
    expect(h.projection.tasks.get("p/a/stale/ALL")?.failure).toBeNull();
  });
});

describe("operations on a task with an interval in flight", () => {
  it("a backfill is refused, naming the running interval, and writes nothing", async () => {
    const { backfill } = await import("@chronolog/scheduler");
    h = await harness([{ name: "busy", idempotent: false, command: "sleep 3" }]);
    await h.start();
    await until("the attempt to run", () => h.projection.instances.get(stream("busy"))?.status === "running");
    const head = await h.log.headPosition();
    const from = new Date(Date.parse(LATEST) - 5 * 86_400_000).toISOString();
    await expect(backfill(h.log, h.projection, "p/a/busy/ALL", from, from, false)).rejects.toThrow(
      /wait for the running intervals to finish first: p\/a\/busy\/ALL .* is running/,
    );
    expect(await h.log.headPosition()).toBe(head);
  });
});

describe("a bogus report for an interval not dispatched yet", () => {
  it("is recorded as rejected and does not keep the interval from running", async () => {
    h = await harness([{ name: "later", idempotent: true }]);
    await h.log.append(
      stream("later"),
      [
        {
          type: "CompletionRejected",
          data: { token: "token-made-up-1", report: "succeeded", reason: "unknown_token" },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    await h.start();
    await until(
      "the task to finish",
      () => h.projection.tasks.get("p/a/later/ALL")?.prevIntervalStart === LATEST,
    );
    expect((await events("later"))[0]).toBe("CompletionRejected");
    expect(h.effects("later")).toBe(1);
  });
});

describe("a reconciler and its dispatcher", () => {
  it("hears worker reports from construction until stop, and again once started", async () => {
    const listeners = new Set<(r: unknown) => void>();
    const dispatcher = {
      dispatch() {},
      onReport(l: (r: unknown) => void) {
        listeners.add(l);
        return () => listeners.delete(l);
      },
      query: async () => new Map<string, string>(),
      cancel() {},
      proceed() {},
    };
    h = await harness([{ name: "listening", idempotent: true }]);
    const r = new Reconciler({ log: h.log, projection: h.projection, dispatcher, actor: "reconciler:test" });
    expect(listeners.size).toBe(1);
    r.stop();
    expect(listeners.size).toBe(0);
    r.start();
    r.start(); // a second start changes nothing
    expect(listeners.size).toBe(1);
    r.stop();
    expect(listeners.size).toBe(0);
  });
});

describe("reconcile: an attempt on a remote worker that no connection here holds", () => {
  it("asks the connected workers about it at every pass, within its lease; one held here is not asked about", async () => {
    h = await harness([
      { name: "orphan", idempotent: false },
      { name: "held", idempotent: false },
    ]);
    const until = new Date(Date.now() + 60_000).toISOString();
    for (const name of ["orphan", "held"])
      await h.log.append(
        stream(name),
        [
          intent(name, 1, `token-${name}`, false),
          {
            type: "AttemptStarted",
            data: { attempt: 1, token: `token-${name}`, workerId: "box", leaseExpiresAt: until },
          },
        ],
        { expectedRevision: "no_stream" },
      );
    const projection = await projected();
    const { dispatcher, asked } = unknowingWorkers();
    const r = new Reconciler({
      log: h.log,
      projection,
      dispatcher,
      actor: "reconciler:test",
      isRemoteWorker: (id) => id === "box",
      unheldRemote: (token) => token !== "token-held",
    });
    const first = await r.pass();
    await r.pass();
    expect(asked).toEqual([["token-orphan"], ["token-orphan"]]);
    // Within its lease nothing is written: the worker that knows it adopts it, or its lease runs out.
    expect(first.written).toBe(0);
    r.stop();
  });
});

describe("reconcile: a lease renewed while the workers are asked", () => {
  it("is not taken for expired, whatever they answer; once it runs out unrenewed, the attempt is retried", async () => {
    h = await harness([{ name: "idem", idempotent: true, lease: 1 }]);
    await h.log.append(
      stream("idem"),
      [
        intent("idem", 1, "token-far", true),
        {
          type: "AttemptStarted",
          data: { attempt: 1, token: "token-far", workerId: "far", leaseExpiresAt: LATEST },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    const projection = await projected();
    let clock = 1_000_000;
    // The worker's answer takes 500 ms and does not come; meanwhile (once) its request renews the lease.
    let renewMeanwhile = true;
    const { dispatcher } = unknowingWorkers(() => {
      if (renewMeanwhile) r.leases.extend("token-far", clock + 1000);
      clock += 500;
    });
    const r = new Reconciler({
      log: h.log,
      projection,
      dispatcher,
      actor: "reconciler:test",
      now: () => clock,
      isRemoteWorker: (id) => id === "far",
      unheldRemote: () => false,
    });
    // The first pass gives it a lease from now; two seconds on it has run out, and is renewed
    // while the workers are asked.
    expect((await r.pass()).written).toBe(0);
    clock += 2000;
    const asked = await r.pass();
    expect(asked).toMatchObject({ expired: 1, written: 0 });
    expect(await events("idem")).toEqual(["DispatchIntended", "AttemptStarted"]);
    // Not renewed again: it runs out, and is retried.
    renewMeanwhile = false;
    clock += 2000;
    expect(await r.pass()).toMatchObject({ expired: 1, written: 1 });
    expect(await events("idem")).toEqual([
      "DispatchIntended",
      "AttemptStarted",
      "AttemptHeartbeatExpired",
      "AttemptAbandoned",
    ]);
    r.stop();
  });
});

describe("reconcile: an intent in a remote worker's hands", () => {
  it("is not abandoned while its lease runs (its worker heard from), however long unconfirmed; then it is", async () => {
    h = await harness([{ name: "idem", idempotent: true, lease: 1 }]);
    await h.log.append(stream("idem"), [intent("idem", 1, "token-given", true)], {
      expectedRevision: "no_stream",
    });
    const projection = await projected();
    // Long after its intent was written: past any grace.
    let clock = Date.now() + 60_000;
    const { dispatcher, asked } = unknowingWorkers();
    const r = new Reconciler({
      log: h.log,
      projection,
      dispatcher,
      actor: "reconciler:test",
      now: () => clock,
    });
    // Given to a worker a moment ago (a slot freed), and its worker heard since: leased.
    r.leases.extend("token-given", clock + 1000);
    expect(await r.pass()).toMatchObject({ unconfirmed: 0, written: 0 });
    expect(asked).toEqual([]);
    clock += 500;
    expect((await r.pass()).written).toBe(0);
    // Not heard from for its lease: asked about, and given up.
    clock += 1000;
    expect(await r.pass()).toMatchObject({ unconfirmed: 1, written: 1 });
    expect(asked).toEqual([["token-given"]]);
    expect(await events("idem")).toEqual(["DispatchIntended", "AttemptAbandoned"]);
    r.stop();
  });
});

describe("reconcile: an earlier process's intent of a task on a queue", () => {
  it("gets its lease from when the passes begin, not from when the loop was made", async () => {
    h = await harness([{ name: "remote", idempotent: true, lease: 1, queue: "gpu" }]);
    await h.log.append(stream("remote"), [intent("remote", 1, "token-earlier", true)], {
      expectedRevision: "no_stream",
    });
    const projection = await projected();
    // Its intent is long past any grace when the restarted scheduler makes its loop.
    let clock = Date.now() + 60_000;
    const { dispatcher } = unknowingWorkers();
    const r = new Reconciler({
      log: h.log,
      projection,
      dispatcher,
      actor: "reconciler:test",
      confirmGraceMs: 300,
      intervalMs: 3_600_000,
      now: () => clock,
    });
    // Catching up on the log takes five of its leases before the passes begin; the earlier
    // process's workers reconnect meanwhile, slowly.
    clock += 5000;
    r.start();
    clock += 900;
    expect(await r.pass()).toMatchObject({ unconfirmed: 0, written: 0 });
    expect(await events("remote")).toEqual(["DispatchIntended"]);
    // A whole lease since the passes began, and no worker has it: given up.
    clock += 200;
    expect(await r.pass()).toMatchObject({ unconfirmed: 1, written: 1 });
    expect(await events("remote")).toEqual(["DispatchIntended", "AttemptAbandoned"]);
    r.stop();
  });
});
