import {
  type DomainEvent,
  explainTask,
  RECENT_DISCONNECTED_WORKERS,
  SchedulerProjection,
  workerStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  failed,
  idOf,
  instance,
  intended,
  RECORDED_MS,
  started,
  streamOf,
  succeeded,
  taskSpec,
  tokenOf,
} from "./support/events.js";
import { at, type Given, on, projectionOf, recorded } from "./support/specification.js";

const T0 = "2026-11-30T00:00:00.000Z";
const T1 = "2026-11-30T00:05:00.000Z";

function connected(
  worker: string,
  queues: string[],
  capacity = 4,
  running: string[] = [],
): DomainEvent & { type: "WorkerConnected" } {
  return {
    type: "WorkerConnected",
    data: {
      worker,
      host: `${worker}.example`,
      queues,
      capacity,
      version: "1 (chronolog 0.1.0)",
      scheduler: "s1",
      token: "gpu-workers",
      running,
    },
  };
}

function disconnected(worker: string, reason: string, scheduler?: string): DomainEvent {
  return { type: "WorkerDisconnected", data: { worker, reason, ...(scheduler ? { scheduler } : {}) } };
}

/** The worker registered with scheduler `scheduler` (one of several on a Kafka log), with its share. */
function connectedTo(worker: string, scheduler: string, capacity: number): DomainEvent {
  const e = connected(worker, ["gpu"], capacity);
  return { ...e, data: { ...e.data, scheduler } };
}

const onWorker = (worker: string, ...events: DomainEvent[]): Given[] => on(workerStream(worker), ...events);

/** A task `name` on queue `queue`, declared at DAY. */
const queued = (name: string, queue: string): Given[] => declaredTask(name, DAY, taskSpec(name, { queue }));

describe("the workers projection: who is connected, and what each runs", () => {
  it("given a worker connected, then it is listed with its host, queues, capacity, version, token and since", () => {
    const p = projectionOf(at(T0, onWorker("gpu-1", connected("gpu-1", ["gpu"], 8))));
    expect(p.workers.connected()).toEqual([
      {
        id: "gpu-1",
        host: "gpu-1.example",
        queues: ["gpu"],
        capacity: 8,
        version: "1 (chronolog 0.1.0)",
        scheduler: "s1",
        token: "gpu-workers",
        since: T0,
        lastHeard: T0,
        running: [],
      },
    ]);
    expect(p.workers.load("gpu")).toEqual({ connected: 1, busy: 0, slots: 8 });
    expect(p.workers.load("cpu")).toEqual({ connected: 0, busy: 0, slots: 0 });
  });

  it("given an attempt of a queue's task started on the worker, then the worker runs it until it ends", () => {
    const given = [
      ...queued("train", "gpu"),
      ...at(T0, onWorker("gpu-1", connected("gpu-1", ["gpu"]))),
      ...instance("train", intended("train")),
      ...at(T1, instance("train", started("train", 1, "gpu-1"))),
    ];
    const running = projectionOf(given).workers.connected()[0]?.running;
    expect(running).toEqual([
      {
        token: tokenOf("train", 1),
        stream: streamOf("train"),
        task: idOf("train"),
        logicalDate: DAY,
        attempt: 1,
        queue: "gpu",
        worker: "gpu-1",
        intendedAt: T0,
        startedAt: T1,
      },
    ]);
    expect(projectionOf(given).workers.load("gpu")).toEqual({ connected: 1, busy: 1, slots: 4 });
    const ended = projectionOf([...given, ...instance("train", succeeded("train"))]);
    expect(ended.workers.connected()[0]?.running).toEqual([]);
    expect(ended.workers.load("gpu")).toEqual({ connected: 1, busy: 0, slots: 4 });
  });

  it("given heartbeats and reports of its attempts, then it was last heard at the latest; not at an abandon", () => {
    const T2 = "2026-11-30T00:07:00.000Z";
    const T3 = "2026-11-30T00:09:00.000Z";
    const extended: DomainEvent = {
      type: "AttemptLeaseExtended",
      data: { attempt: 1, token: tokenOf("train", 1), leaseExpiresAt: T3 },
    };
    const abandoned: DomainEvent = {
      type: "AttemptAbandoned",
      data: { attempt: 1, token: tokenOf("sort", 1), reason: "lost", by: "reconcile", retry: false },
    };
    const base = [
      ...queued("train", "gpu"),
      ...queued("sort", "gpu"),
      ...at(T0, onWorker("gpu-1", connected("gpu-1", ["gpu"]))),
      ...at(T0, instance("train", intended("train"))),
      ...at(T1, instance("train", started("train", 1, "gpu-1"))),
    ];
    const heard = (given: Given[]) => projectionOf(given).workers.connected()[0]?.lastHeard;
    expect(heard(base)).toBe(T1);
    expect(heard([...base, ...at(T2, instance("train", extended))])).toBe(T2);
    const reported = { ...succeeded("train"), data: { ...succeeded("train").data, workerId: "gpu-1" } };
    expect(heard([...base, ...at(T3, instance("train", reported as DomainEvent))])).toBe(T3);
    // The reconcile loop's verdict on an attempt, or a report naming no worker, is not the worker heard from.
    const sort = [
      ...on(streamOf("sort"), intended("sort")),
      ...at(T2, on(streamOf("sort"), started("sort", 1, "gpu-1"))),
    ];
    expect(heard([...base, ...sort, ...at(T3, on(streamOf("sort"), abandoned))])).toBe(T2);
    expect(heard([...base, ...at(T3, instance("train", succeeded("train")))])).toBe(T1);
  });

  it("given a failed attempt and its retry, then busy counts the retry alone", () => {
    const p = projectionOf([
      ...queued("train", "gpu"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"])),
      ...instance(
        "train",
        intended("train"),
        started("train", 1, "gpu-1"),
        failed("train", 1, "2026-11-30T01:00:00.000Z"),
      ),
      ...instance("train", intended("train", { attempt: 2 })),
    ]);
    expect(p.workers.load("gpu")).toEqual({ connected: 1, busy: 1, slots: 4 });
    expect(p.workers.connected()[0]?.running).toEqual([]);
  });

  it("given a task with no queue on the scheduler's own workers, then nothing is followed", () => {
    const p = projectionOf([
      ...declaredTask("plain"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"])),
      ...instance("plain", intended("plain"), started("plain", 1, "local-7")),
    ]);
    expect(p.workers.attempt(tokenOf("plain", 1))).toBeUndefined();
    expect(p.workers.connected()[0]?.running).toEqual([]);
  });

  it("given a worker gone, then it is listed among the disconnected with its reason, the latest first", () => {
    const p = projectionOf([
      ...at(T0, onWorker("a", connected("a", ["gpu"])), onWorker("b", connected("b", ["gpu", "cpu"]))),
      ...at(T1, onWorker("a", disconnected("a", "heartbeats stopped"))),
      ...at("2026-11-30T00:06:00.000Z", onWorker("b", disconnected("b", "said goodbye"))),
    ]);
    expect(p.workers.connected()).toEqual([]);
    expect(p.workers.disconnected().map((w) => [w.id, w.reason, w.since, w.until])).toEqual([
      ["b", "said goodbye", T0, "2026-11-30T00:06:00.000Z"],
      ["a", "heartbeats stopped", T0, T1],
    ]);
    expect(p.workers.load("gpu")).toEqual({ connected: 0, busy: 0, slots: 0 });
  });

  it("given a worker that reconnects announcing its attempt, then it runs it again and is not among the gone", () => {
    const p = projectionOf([
      ...queued("train", "gpu"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"])),
      ...instance("train", intended("train"), started("train", 1, "gpu-1")),
      ...onWorker("gpu-1", disconnected("gpu-1", "link broke")),
      ...at(T1, onWorker("gpu-1", connected("gpu-1", ["gpu"], 4, [tokenOf("train", 1)]))),
    ]);
    expect(p.workers.disconnected()).toEqual([]);
    const [w] = p.workers.connected();
    expect(w?.since).toBe(T1);
    expect(w?.running.map((a) => a.token)).toEqual([tokenOf("train", 1)]);
  });

  it("given workers gone and their attempts ended, then nothing of them is kept but the list of the gone", () => {
    const p = projectionOf([
      ...queued("train", "gpu"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"]), disconnected("gpu-1", "said goodbye")),
      ...onWorker("gpu-2", connected("gpu-2", ["gpu"])),
      ...instance("train", intended("train"), started("train", 1, "gpu-2")),
      ...onWorker("gpu-2", disconnected("gpu-2", "link broke")),
      ...instance("train", failed("train")),
    ]);
    const held = p.workers as unknown as { runs: Map<string, unknown>; attempts: Map<string, unknown> };
    expect([...held.runs.keys()]).toEqual([]);
    expect([...held.attempts.keys()]).toEqual([]);
    expect(p.workers.load("gpu")).toEqual({ connected: 0, busy: 0, slots: 0 });
  });

  it("given a worker id registered with a token, then it is bound to it while connected or running attempts, and free after", () => {
    const other = (worker: string) => {
      const e = connected(worker, ["gpu"]);
      return { ...e, data: { ...e.data, token: "other" } };
    };
    const given = [
      ...queued("train", "gpu"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"])),
      ...instance("train", intended("train"), started("train", 1, "gpu-1")),
    ];
    expect(projectionOf(given).workers.boundTo("gpu-1")).toEqual({ token: "gpu-workers" });
    // Gone, its attempt in flight: still bound (another token would take the attempt over).
    const gone = [...given, ...onWorker("gpu-1", disconnected("gpu-1", "link broke"))];
    const p = projectionOf(gone);
    expect(p.workers.boundTo("gpu-1")).toEqual({ token: "gpu-workers" });
    // Through a checkpoint too.
    expect(SchedulerProjection.fromSnapshot(p.toSnapshot()).workers.boundTo("gpu-1")).toEqual({
      token: "gpu-workers",
    });
    // A registration of another token on record (as an older scheduler allowed): the first one holds.
    expect(projectionOf([...given, ...onWorker("gpu-1", other("gpu-1"))]).workers.boundTo("gpu-1")).toEqual({
      token: "gpu-workers",
    });
    // Its attempt ended: the id is free.
    expect(
      projectionOf([...gone, ...instance("train", failed("train"))]).workers.boundTo("gpu-1"),
    ).toBeUndefined();
    // Gone holding nothing: free at once.
    const idle = onWorker("gpu-2", connected("gpu-2", ["gpu"]), disconnected("gpu-2", "said goodbye"));
    expect(projectionOf(idle).workers.boundTo("gpu-2")).toBeUndefined();
    expect(projectionOf([...idle, ...onWorker("gpu-2", other("gpu-2"))]).workers.boundTo("gpu-2")).toEqual({
      token: "other",
    });
  });

  it("given more disconnections than remembered, then the oldest are forgotten", () => {
    const given: Given[] = [];
    for (let i = 0; i <= RECENT_DISCONNECTED_WORKERS; i++)
      given.push(...onWorker(`w${i}`, connected(`w${i}`, ["q"]), disconnected(`w${i}`, "gone")));
    const gone = projectionOf(given).workers.disconnected();
    expect(gone.length).toBe(RECENT_DISCONNECTED_WORKERS);
    expect(gone[0]?.id).toBe(`w${RECENT_DISCONNECTED_WORKERS}`);
    expect(gone.some((w) => w.id === "w0")).toBe(false);
  });

  it("given a worker registered with two schedulers, then it is listed once with both and the sum of its shares", () => {
    const p = projectionOf([
      ...at(T0, onWorker("gpu-1", connectedTo("gpu-1", "sa", 4))),
      ...at(T1, onWorker("gpu-1", connectedTo("gpu-1", "sb", 4))),
    ]);
    expect(p.workers.connected()).toMatchObject([
      { id: "gpu-1", capacity: 8, scheduler: "sa, sb", since: T1 },
    ]);
    expect(p.workers.load("gpu")).toEqual({ connected: 1, busy: 0, slots: 8 });
    expect(p.workers.connections()).toEqual([
      { worker: "gpu-1", scheduler: "sa", since: T0 },
      { worker: "gpu-1", scheduler: "sb", since: T1 },
    ]);
  });

  it("given it leaves one of its two schedulers, then it stays connected to the other; leaving both, it is gone", () => {
    const one = projectionOf([
      ...at(T0, onWorker("gpu-1", connectedTo("gpu-1", "sa", 4), connectedTo("gpu-1", "sb", 4))),
      ...at(T1, onWorker("gpu-1", disconnected("gpu-1", "scheduler sa is gone", "sa"))),
    ]);
    expect(one.workers.connected()).toMatchObject([{ id: "gpu-1", capacity: 4, scheduler: "sb" }]);
    expect(one.workers.disconnected()).toEqual([]);
    const both = projectionOf([
      ...at(T0, onWorker("gpu-1", connectedTo("gpu-1", "sa", 4), connectedTo("gpu-1", "sb", 4))),
      ...at(T1, onWorker("gpu-1", disconnected("gpu-1", "gone", "sa"), disconnected("gpu-1", "bye", "sb"))),
    ]);
    expect(both.workers.connected()).toEqual([]);
    expect(both.workers.disconnected()).toMatchObject([{ id: "gpu-1", reason: "bye" }]);
  });

  it("given a disconnection naming no scheduler, then it is gone from all of them", () => {
    const p = projectionOf([
      ...at(T0, onWorker("gpu-1", connectedTo("gpu-1", "sa", 4), connectedTo("gpu-1", "sb", 4))),
      ...at(T1, onWorker("gpu-1", disconnected("gpu-1", "token revoked"))),
    ]);
    expect(p.workers.connected()).toEqual([]);
  });

  it("given a snapshot of a worker on two schedulers, then the restored one keeps both registrations", () => {
    const history = onWorker("gpu-1", connectedTo("gpu-1", "sa", 4), connectedTo("gpu-1", "sb", 4));
    const before = new SchedulerProjection();
    for (const e of recorded(history)) before.apply(e);
    const restored = SchedulerProjection.fromSnapshot(JSON.parse(JSON.stringify(before.toSnapshot())));
    expect(restored.workers.connected()).toEqual(before.workers.connected());
    const [gone] = recorded([...history, ...onWorker("gpu-1", disconnected("gpu-1", "gone", "sa"))]).slice(2);
    if (gone) restored.apply(gone);
    expect(restored.workers.connected()).toMatchObject([{ capacity: 4, scheduler: "sb" }]);
  });

  it("given a snapshot taken mid-attempt, then the restored projection folds on to the same state", () => {
    const history = recorded([
      ...queued("train", "gpu"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"])),
      ...instance("train", intended("train"), started("train", 1, "gpu-1")),
      ...onWorker("gpu-2", connected("gpu-2", ["gpu"]), disconnected("gpu-2", "fell behind")),
      ...instance("train", succeeded("train")),
    ]);
    const whole = new SchedulerProjection();
    for (const e of history) whole.apply(e);
    const cut = 5;
    const before = new SchedulerProjection();
    for (const e of history.slice(0, cut)) before.apply(e);
    const snapshot = JSON.parse(JSON.stringify(before.toSnapshot()));
    const restored = SchedulerProjection.fromSnapshot(snapshot);
    expect(restored.workers.connected()).toEqual(before.workers.connected());
    for (const e of history.slice(cut)) restored.apply(e);
    expect(restored.workers.toSnapshot()).toEqual(whole.workers.toSnapshot());
    expect(restored.workers.disconnected()).toEqual(whole.workers.disconnected());
  });
});

describe("why a due task with a queue does not run", () => {
  const explain = (given: Given[]) => explainTask(projectionOf(given), idOf("train"), RECORDED_MS);

  it("given no worker serves its queue, then it is held: waiting for a worker (0 connected)", () => {
    const why = explain([...queued("train", "gpu"), ...onWorker("cpu-1", connected("cpu-1", ["cpu"]))]);
    expect(why.condition).toBe("held");
    expect(why.reasons).toContain("waiting for a worker on queue gpu (0 connected)");
  });

  it("given every slot busy, then it is held and says how many", () => {
    const why = explain([
      ...queued("train", "gpu"),
      ...queued("other", "gpu"),
      ...onWorker("gpu-1", connected("gpu-1", ["gpu"], 1)),
      ...instance("other", intended("other"), started("other", 1, "gpu-1")),
    ]);
    expect(why.condition).toBe("held");
    expect(why.reasons).toContain("waiting for a worker on queue gpu (1 connected, 1 of 1 slot busy)");
  });

  it("given a free slot, then it is ready, and still says where it goes", () => {
    const why = explain([...queued("train", "gpu"), ...onWorker("gpu-1", connected("gpu-1", ["gpu"], 16))]);
    expect(why.condition).toBe("ready");
    expect(why.reasons).toContain("goes to a worker on queue gpu (1 connected, 0 of 16 slots busy)");
  });

  it("given a task with no queue, then no worker is waited for", () => {
    const why = explainTask(projectionOf(declaredTask("plain")), idOf("plain"), RECORDED_MS);
    expect(why.condition).toBe("ready");
    expect(why.reasons.join(" ")).not.toMatch(/queue/);
  });
});
