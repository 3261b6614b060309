import {
  checkLostWorker,
  type DomainEvent,
  decideExpiredLease,
  decideLostWorker,
  decideStuckInstance,
  decideUnconfirmedIntent,
  type InstanceState,
  intentGrace,
  isUnconfirmed,
  needsScheduler,
  PROCESS_ENDED,
  runNeedsRepair,
  type SchedulerProjection,
  type TaskState,
  type WorkerFacts,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  failed,
  heartbeatExpired,
  idOf,
  instance,
  intended,
  intervalCompleted,
  intervalReset,
  RECORDED_MS,
  runIdOf,
  runStarted,
  started,
  streamOf,
  succeeded,
  tokenOf,
} from "./support/events.js";
import { at, type Given, instanceOf, on, projectionOf, specification } from "./support/specification.js";

const BY = "scheduler:test";
const SECOND = 1000;

function must(inst: InstanceState | undefined): InstanceState {
  if (!inst) throw new Error("the history holds no instance");
  return inst;
}

/** The instance of task `t` at DAY and its task, as the reconciler reads them from the projection. */
function currentOf(p: SchedulerProjection): { inst: InstanceState; task: TaskState | undefined } {
  return { inst: must(p.instances.get(streamOf("t"))), task: p.tasks.get(idOf("t")) };
}

describe("unconfirmed intent: which intents to ask the workers about", () => {
  const spec = specification({
    fold: instanceOf,
    decide: (inst, input: { now: number; graceMs: number; dispatchedAt?: number }) =>
      isUnconfirmed(must(inst), input.now, input.graceMs, input.dispatchedAt),
  });
  const T = Date.parse("2026-11-30T10:00:00.000Z");
  const recordedAtT = at("2026-11-30T10:00:00.000Z", instance("t", intended()));

  it("an intent within its grace period, counted from when it was recorded, is left to its dispatch", () => {
    spec
      .given(recordedAtT)
      .when({ now: T + 2 * SECOND - 1, graceMs: 2 * SECOND })
      .then(false);
  });

  it("an intent past its grace period is unconfirmed", () => {
    spec
      .given(recordedAtT)
      .when({ now: T + 2 * SECOND, graceMs: 2 * SECOND })
      .then(true);
  });

  it("the grace period counts from this process's dispatch when it made one", () => {
    spec
      .given(recordedAtT)
      .when({ now: T + 3 * SECOND, graceMs: 2 * SECOND, dispatchedAt: T + 2 * SECOND })
      .then(false);
    spec
      .given(recordedAtT)
      .when({ now: T + 4 * SECOND, graceMs: 2 * SECOND, dispatchedAt: T + 2 * SECOND })
      .then(true);
  });

  it("an attempt a worker started is not unconfirmed, however old", () => {
    spec
      .given(at("2026-11-30T10:00:00.000Z", instance("t", intended(), started())))
      .when({ now: T + 60 * SECOND, graceMs: 2 * SECOND })
      .then(false);
  });
});

describe("unconfirmed intent: the grace of an intent a remote worker may hold", () => {
  const spec = specification({
    fold: instanceOf,
    decide: (
      inst,
      input: { now: number; onQueue: boolean; dispatchedAt?: number; listeningSince: number },
    ) => {
      const g = intentGrace(must(inst), { graceMs: 2 * SECOND, ...input });
      return isUnconfirmed(must(inst), input.now, g.graceMs, g.since);
    },
  });
  const T = Date.parse("2026-11-30T10:00:00.000Z");
  const leaseOf10 = at("2026-11-30T10:00:00.000Z", instance("t", intended("t", { leaseSeconds: 10 })));

  it("an intent of a task on no queue has the ordinary grace", () => {
    spec
      .given(leaseOf10)
      .when({ now: T + 2 * SECOND, onQueue: false, listeningSince: T })
      .then(true);
  });

  it("an intent on a queue waits a whole lease from its dispatch here: its worker's link may be cut", () => {
    spec
      .given(leaseOf10)
      .when({ now: T + 10 * SECOND, onQueue: true, dispatchedAt: T + 1 * SECOND, listeningSince: T })
      .then(false);
    spec
      .given(leaseOf10)
      .when({ now: T + 11 * SECOND, onQueue: true, dispatchedAt: T + 1 * SECOND, listeningSince: T })
      .then(true);
  });

  it("an earlier process's intent on a queue waits a lease from when this process began to listen", () => {
    // Recorded at T by a process that died; this one listens from T + 60 s: its workers
    // reconnect from then, or have fenced themselves within the lease.
    spec
      .given(leaseOf10)
      .when({ now: T + 69 * SECOND, onQueue: true, listeningSince: T + 60 * SECOND })
      .then(false);
    spec
      .given(leaseOf10)
      .when({ now: T + 70 * SECOND, onQueue: true, listeningSince: T + 60 * SECOND })
      .then(true);
  });

  it("a grace longer than the lease is kept", () => {
    spec
      .given(at("2026-11-30T10:00:00.000Z", instance("t", intended("t", { leaseSeconds: 1 }))))
      .when({ now: T + 1 * SECOND, onQueue: true, listeningSince: T })
      .then(false);
  });
});

describe("unconfirmed intent: what to write once the workers answered", () => {
  const spec = specification({
    fold: instanceOf,
    decide: (inst, knownToAWorker: boolean) => decideUnconfirmedIntent(must(inst), knownToAWorker, BY),
  });

  it("an intent no worker knows is abandoned, to be retried with a new attempt", () => {
    spec
      .given(instance("t", intended()))
      .when(false)
      .then([
        {
          type: "AttemptAbandoned",
          data: {
            attempt: 1,
            token: tokenOf("t", 1),
            reason: "dispatch never confirmed by a worker",
            by: BY,
            retry: true,
          },
        },
      ]);
  });

  it("an intent a worker knows is left alone: the worker will report", () => {
    spec.given(instance("t", intended())).when(true).then([]);
  });

  it("an earlier process's intent is abandoned and run again, until the fourth such end in a row", () => {
    const ended = (attempt: number): DomainEvent[] => [
      intended("t", { attempt }),
      {
        type: "AttemptAbandoned",
        data: {
          attempt,
          token: tokenOf("t", attempt),
          reason: `dispatch never confirmed by a worker: it ${PROCESS_ENDED}`,
          by: BY,
          retry: true,
        },
      },
    ];
    // Interrupted as it ran, its worker gone with its process: an end of the same kind.
    const interrupted: DomainEvent[] = [
      intended("t", { attempt: 3 }),
      started("t", 3),
      {
        type: "AttemptFailed",
        data: {
          attempt: 3,
          token: tokenOf("t", 3),
          error: { kind: "interrupted", message: `worker w-1 ${PROCESS_ENDED} and is gone` },
          exitCode: null,
          retryAt: DAY,
        },
      },
    ];
    const settle = specification({
      fold: instanceOf,
      decide: (inst, _: null) => decideUnconfirmedIntent(must(inst), false, BY, true),
    });
    const retryOf = (events: readonly DomainEvent[]) =>
      (events[0]?.data as { retry?: boolean } | undefined)?.retry;
    settle
      .given(instance("t", intended()))
      .when(null)
      .thenMatches((events) => {
        expect(events[0]?.data).toMatchObject({
          reason: "dispatch never confirmed by a worker: it belonged to an earlier scheduler process",
          retry: true,
        });
      });
    settle
      .given(instance("t", ...ended(1), ...ended(2), intended("t", { attempt: 3 })))
      .when(null)
      .thenMatches((events) => expect(retryOf(events)).toBe(true));
    settle
      .given(instance("t", ...ended(1), ...ended(2), ...interrupted, intended("t", { attempt: 4 })))
      .when(null)
      .thenMatches((events) => {
        expect(retryOf(events)).toBe(false);
        expect((events[0]?.data as { reason?: string } | undefined)?.reason).toContain(
          "the 4th such end in a row: not run again on its own",
        );
      });
    // An end of another kind between them starts the count again (four ends here, two since);
    // so does an operator's retry of the halted interval; a live pass's abandon is not counted.
    settle
      .given(
        instance(
          "t",
          ...ended(1),
          ...ended(2),
          intended("t", { attempt: 3 }),
          failed("t", 3, DAY),
          ...ended(4),
          ...ended(5),
          intended("t", { attempt: 6 }),
        ),
      )
      .when(null)
      .thenMatches((events) => expect(retryOf(events)).toBe(true));
    const halted: DomainEvent = {
      type: "AttemptAbandoned",
      data: {
        attempt: 4,
        token: tokenOf("t", 4),
        reason: `dispatch never confirmed by a worker: it ${PROCESS_ENDED}, the 4th such end in a row`,
        by: BY,
        retry: false,
      },
    };
    const fourth = [...ended(1), ...ended(2), ...ended(3), intended("t", { attempt: 4 }), halted];
    expect(instanceOf(instance("t", ...fourth))?.status).toBe("abandoned");
    settle
      .given(instance("t", ...fourth, intended("t", { attempt: 5 })))
      .when(null)
      .thenMatches((events) => expect(retryOf(events)).toBe(true));
    spec
      .given(instance("t", ...ended(1), ...ended(2), ...ended(3), intended("t", { attempt: 4 })))
      .when(false)
      .thenMatches((events) => expect(retryOf(events)).toBe(true));
  });

  it("only the current attempt is abandoned", () => {
    spec
      .given(instance("t", intended(), failed("t", 1, DAY), intended("t", { attempt: 2 })))
      .when(false)
      .thenMatches((events) => {
        expect(events.map((e) => [e.type, "token" in e.data ? e.data.token : null])).toEqual([
          ["AttemptAbandoned", tokenOf("t", 2)],
        ]);
      });
  });
});

describe("expired lease", () => {
  const NOW = Date.parse("2026-11-30T10:00:00.000Z");
  const spec = specification({
    fold: instanceOf,
    decide: (inst, knownToAWorker: boolean) => decideExpiredLease(must(inst), knownToAWorker, NOW, BY),
  });
  const expired: DomainEvent = {
    type: "AttemptHeartbeatExpired",
    data: { attempt: 1, token: tokenOf("t", 1), leaseExpiredAt: "2026-11-30T10:00:00.000Z", workerId: "w-1" },
  };

  it("a live worker that still knows the attempt gets its lease renewed", () => {
    spec
      .given(instance("t", intended(), started()))
      .when(true)
      .then({ kind: "renew" });
  });

  it("an idempotent task whose attempt no worker knows is retried: expired, then abandoned", () => {
    spec
      .given(instance("t", intended("t", { idempotent: true }), started()))
      .when(false)
      .then({
        kind: "write",
        events: [
          expired,
          {
            type: "AttemptAbandoned",
            data: {
              attempt: 1,
              token: tokenOf("t", 1),
              reason: "lease expired and no worker knows the attempt",
              by: BY,
              retry: true,
            },
          },
        ],
      });
  });

  it("a task that is not idempotent is only marked lease-expired, and waits", () => {
    spec
      .given(instance("t", intended("t", { idempotent: false }), started()))
      .when(false)
      .then({ kind: "write", events: [expired] });
  });

  it("an attempt already lease-expired waits for its worker or an operator: nothing more is written", () => {
    spec
      .given(instance("t", intended(), started(), heartbeatExpired()))
      .when(false)
      .then({ kind: "wait" });
  });

  it("an attempt already lease-expired whose worker turns up again is renewed", () => {
    spec
      .given(instance("t", intended(), started(), heartbeatExpired()))
      .when(true)
      .then({ kind: "renew" });
  });

  it("an attempt that is not running has no lease to expire", () => {
    spec
      .given(instance("t", intended("t", { idempotent: true })))
      .when(false)
      .then({ kind: "wait" });
    spec
      .given(instance("t", intended("t", { idempotent: true }), started(), succeeded()))
      .when(false)
      .then({ kind: "wait" });
  });
});

describe("stuck instance", () => {
  const spec = specification({
    fold: (history: readonly Given[]) => currentOf(projectionOf(history)),
    decide: ({ inst, task }, by: string) => decideStuckInstance(inst, task, by),
  });
  const abandoned = (reason: string): DomainEvent[] => [
    {
      type: "AttemptAbandoned",
      data: { attempt: 1, token: tokenOf("t", 1), reason, by: BY, retry: false },
    },
  ];
  const waitingForRetry = instance("t", intended(), failed("t", 1, "2026-11-30T00:05:00.000Z"));

  it("an instance waiting for a retry after its task was reset to another interval is abandoned", () => {
    spec
      .given(declaredTask("t"), waitingForRetry, intervalReset("t", "2026-11-20T02:00:00.000Z"))
      .when(BY)
      .then(abandoned("the task moved on to another interval"));
  });

  it("an instance whose task was reset to the same interval after its dispatch is abandoned", () => {
    spec
      .given(declaredTask("t"), waitingForRetry, intervalReset("t", DAY))
      .when(BY)
      .then(abandoned("the task moved on to another interval"));
  });

  it("an instance queued while its task advanced past it is abandoned", () => {
    spec
      .given(declaredTask("t"), instance("t", intended()), intervalCompleted("t"))
      .when(BY)
      .then(abandoned("the task moved on to another interval"));
  });

  it("an instance of a task no longer declared is abandoned", () => {
    spec.given(waitingForRetry).when(BY).then(abandoned("the task is no longer declared"));
  });

  it("a running instance is left alone although its task moved on: its outcome still arrives", () => {
    spec
      .given(declaredTask("t"), instance("t", intended(), started()), intervalReset("t", DAY))
      .when(BY)
      .then([]);
  });

  it("an instance of its task's current interval is not stuck", () => {
    spec.given(declaredTask("t"), waitingForRetry).when(BY).then([]);
    spec.given(declaredTask("t"), instance("t", intended())).when(BY).then([]);
  });

  it("a terminal instance is not stuck", () => {
    spec
      .given(declaredTask("t"), instance("t", intended(), succeeded()))
      .when(BY)
      .then([]);
  });
});

describe("needsScheduler", () => {
  // The instance folded from its own stream: the projection drops one that ended for a task
  // that moved on, and the decider must say no to it all the same.
  const spec = specification({
    fold: (history: readonly Given[]) => ({
      inst: must(instanceOf(history, streamOf("t"))),
      task: projectionOf(history).tasks.get(idOf("t")),
    }),
    decide: ({ inst, task }, _: "the pass") => needsScheduler(inst, task),
  });

  it("a task whose current instance ended needs the scheduler to record the outcome", () => {
    spec
      .given(declaredTask("t"), instance("t", intended(), succeeded()))
      .when("the pass")
      .then(true);
    spec
      .given(declaredTask("t"), instance("t", intended(), failed()))
      .when("the pass")
      .then(true);
  });

  it("an instance still in play does not", () => {
    spec
      .given(declaredTask("t"), instance("t", intended(), started()))
      .when("the pass")
      .then(false);
  });

  it("an outcome dispatched before the task was reset is not the task's to record", () => {
    spec
      .given(declaredTask("t"), instance("t", intended(), succeeded()), intervalReset("t", DAY))
      .when("the pass")
      .then(false);
  });

  it("an outcome of an interval the task has advanced past is not the task's to record", () => {
    spec
      .given(declaredTask("t"), instance("t", intended(), succeeded()), intervalCompleted("t"))
      .when("the pass")
      .then(false);
  });

  it("an instance of a task no longer declared has no one to record it for", () => {
    spec
      .given(instance("t", intended(), succeeded()))
      .when("the pass")
      .then(false);
  });
});

describe("runNeedsRepair", () => {
  const spec = specification({
    fold: (history: readonly Given[]) => {
      const run = projectionOf(history).runs.get(runIdOf("w"));
      if (!run) throw new Error("the history holds no run");
      return run;
    },
    decide: (run, _: "the pass") => runNeedsRepair(run),
  });
  const inRun = { runId: runIdOf("w") };

  it("a run left running with every task terminal needs the scheduler to finish it", () => {
    spec
      .given(
        runStarted("w", ["a", "b"]),
        instance("a", intended("a", inRun), succeeded("a")),
        instance("b", intended("b", inRun), failed("b")),
      )
      .when("the pass")
      .then(true);
  });

  it("a run with a task running, waiting for a retry or not yet dispatched does not", () => {
    const a = instance("a", intended("a", inRun), succeeded("a"));
    spec
      .given(runStarted("w", ["a", "b"]), a, instance("b", intended("b", inRun), started("b")))
      .when("the pass")
      .then(false);
    spec
      .given(runStarted("w", ["a", "b"]), a, instance("b", intended("b", inRun), failed("b", 1, DAY)))
      .when("the pass")
      .then(false);
    spec
      .given(runStarted("w", ["a", "b"]), a)
      .when("the pass")
      .then(false);
  });

  it("a finished run and a run of no tasks do not", () => {
    spec
      .given(
        runStarted("w", ["a"]),
        instance("a", intended("a", inRun), succeeded("a")),
        on(`run-${runIdOf("w")}`, {
          type: "RunFinished",
          data: {
            runId: runIdOf("w"),
            workflow: "w",
            logicalDate: DAY,
            state: "success",
            succeeded: [idOf("a")],
            failed: [],
            skipped: [],
            upstreamFailed: [],
            cancelled: [],
          },
        }),
      )
      .when("the pass")
      .then(false);
    spec.given(runStarted("w", [])).when("the pass").then(false);
  });
});

describe("lost worker: which attempts are on a worker that is gone", () => {
  const NOW = RECORDED_MS + 60 * SECOND;
  const spec = specification({
    fold: instanceOf,
    decide: (inst, facts: Partial<WorkerFacts>) =>
      checkLostWorker(must(inst), {
        workerGone: true,
        ownWorker: true,
        leaseDeadline: undefined,
        now: NOW,
        ...facts,
      }),
  });
  const running = instance("t", intended("t", { leaseSeconds: 30 }), started());

  it("an attempt on a gone worker of this process's own is lost, whatever its lease", () => {
    spec.given(running).when({ ownWorker: true }).then({ kind: "lost" });
    spec
      .given(running)
      .when({ ownWorker: true, leaseDeadline: NOW + 10 * SECOND })
      .then({ kind: "lost" });
  });

  it("an attempt already lease-expired on a gone worker of its own is lost too", () => {
    spec
      .given(instance("t", intended(), started(), heartbeatExpired()))
      .when({ ownWorker: true })
      .then({ kind: "lost" });
  });

  it("another scheduler's gone worker within its lease here is given that lease", () => {
    spec
      .given(running)
      .when({ ownWorker: false, leaseDeadline: NOW + 10 * SECOND })
      .then({ kind: "within_lease", leaseDeadline: NOW + 10 * SECOND });
    spec
      .given(running)
      .when({ ownWorker: false, leaseDeadline: NOW })
      .then({ kind: "within_lease", leaseDeadline: NOW });
  });

  it("another scheduler's gone worker this process never saw gets a fresh lease from now", () => {
    spec
      .given(running)
      .when({ ownWorker: false, leaseDeadline: undefined })
      .then({ kind: "within_lease", leaseDeadline: NOW + 30 * SECOND });
  });

  it("another scheduler's gone worker whose lease ran out here is lost", () => {
    spec
      .given(running)
      .when({ ownWorker: false, leaseDeadline: NOW - 1 })
      .then({ kind: "lost" });
  });

  it("an attempt on a live worker is not lost, own or not", () => {
    spec.given(running).when({ workerGone: false, ownWorker: true }).then({ kind: "not_lost" });
    spec
      .given(running)
      .when({ workerGone: false, ownWorker: false, leaseDeadline: NOW - 1 })
      .then({ kind: "not_lost" });
  });

  it("an attempt no worker started, or one that ended, is not lost", () => {
    spec.given(instance("t", intended())).when({}).then({ kind: "not_lost" });
    spec
      .given(instance("t", intended(), started(), succeeded()))
      .when({})
      .then({ kind: "not_lost" });
  });
});

describe("lost worker: what to do once the workers answered", () => {
  const spec = specification({
    fold: instanceOf,
    decide: (inst, knownToAWorker: boolean) => decideLostWorker(must(inst), knownToAWorker),
  });
  const running = instance("t", intended(), started("t", 1, "sched-old-3"));

  it("an attempt no worker knows is reported interrupted (its worker gone with its process), naming its worker", () => {
    spec.given(running).when(false).then({
      kind: "report_interrupted",
      reason: "worker sched-old-3 belonged to an earlier scheduler process and is gone",
    });
  });

  it("an attempt a worker still knows is left for that worker to report", () => {
    spec.given(running).when(true).then({ kind: "leave" });
  });
});
