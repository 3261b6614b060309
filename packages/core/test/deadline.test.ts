import {
  checkDeadline,
  connectionSpecSchema,
  connectionStream,
  type DomainEvent,
  DURATIONS_KEPT,
  deadlineOf,
  describeCause,
  estimateDone,
  type LoggedEvent,
  medianDuration,
  nextWatched,
  recordDuration,
  rootCause,
  type SchedulerProjection,
  taskStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  idOf,
  intended,
  keyOf,
  NEXT_DAY,
  started,
  streamOf,
  succeeded,
  taskSpec,
  tokenOf,
} from "./support/events.js";
import { type Given, on, projectionOf } from "./support/specification.js";

/**
 * Deadlines, given / when / then: given a history of daily tasks (interval DAY, due at its end,
 * NEXT_DAY), when the deadline, the root cause, the estimate or the watch is asked at `now`,
 * then this answer.
 */
const END = Date.parse(NEXT_DAY);
const MIN = 60_000;

const failedAt = (name: string, stderr: string, exitCode = 3): Given[] => [
  ...on(streamOf(name), intended(name), started(name), {
    type: "AttemptFailed",
    data: {
      attempt: 1,
      token: tokenOf(name, 1),
      error: { kind: "exit_code", message: `exit code ${exitCode}` },
      exitCode,
      durationMs: 10,
      output: { stdoutTail: "", stderrTail: `starting\n${stderr}\n` },
    },
  }),
  ...on(taskStream(keyOf(name)), {
    type: "IntervalFailed",
    data: { key: keyOf(name), logicalDate: DAY, state: "failed", reason: `exit code ${exitCode}` },
  }),
];

/** A task's successful attempts of earlier days, each taking `ms`: its recorded durations. */
const tookBefore = (p: SchedulerProjection, name: string, ...ms: number[]) => {
  for (const d of ms) {
    const w = p.durations.get(idOf(name)) ?? [];
    p.durations.set(idOf(name), recordDuration(w, d));
  }
  return p;
};

/** ingest -> clean -> report: the report's deadline is 30 minutes after its interval's end. */
const chain = (): Given[] => [
  ...declaredTask("ingest"),
  ...declaredTask("clean", DAY, taskSpec("clean", { parents: [keyOf("ingest")] })),
  ...declaredTask(
    "report",
    DAY,
    taskSpec("report", { parents: [keyOf("clean")], deadline: { within: "30m" } }),
  ),
];

describe("the deadline of an interval", () => {
  it("is `within` after the interval's end", () => {
    expect(deadlineOf(taskSpec("t", { deadline: { within: "4h" } }), DAY)).toBe(END + 4 * 60 * MIN);
  });

  it("is the `at` local time on the day the interval ends, or the next day when that is before the end", () => {
    // Ends 2026-11-29T02:00Z.
    expect(deadlineOf(taskSpec("t", { deadline: { at: "06:00" } }), DAY)).toBe(
      Date.parse("2026-11-29T06:00:00.000Z"),
    );
    expect(deadlineOf(taskSpec("t", { deadline: { at: "01:30" } }), DAY)).toBe(
      Date.parse("2026-11-30T01:30:00.000Z"),
    );
  });

  it("reads `at` in the task's timezone", () => {
    // Daily at local midnight in Paris (UTC+1 in winter): 2026-11-28 ends at 2026-11-28T23:00Z.
    const t = taskSpec("t", { cron: "0 0 * * *", timezone: "Europe/Paris", deadline: { at: "06:00" } });
    expect(deadlineOf(t, "2026-11-27T23:00:00.000Z")).toBe(Date.parse("2026-11-29T05:00:00.000Z"));
  });

  it("is none for a task that declares none", () => {
    expect(deadlineOf(taskSpec("t"), DAY)).toBeNull();
  });

  it("is watched from the first interval whose deadline is still to come, stepping over old ones", () => {
    const t = taskSpec("t", { deadline: { within: "1h" } });
    expect(nextWatched(t, DAY, END + 30 * MIN)).toEqual({ logicalDate: DAY, deadline: END + 60 * MIN });
    // A month later: the interval ending just before now, not one a day from DAY.
    const later = Date.parse("2026-12-28T02:30:00.000Z");
    expect(nextWatched(t, DAY, later)).toEqual({
      logicalDate: "2026-12-27T02:00:00.000Z",
      deadline: Date.parse("2026-12-28T03:00:00.000Z"),
    });
  });
});

describe("the durations the estimate reads", () => {
  it("keep the most recent few, and their median", () => {
    let w: number[] = [];
    for (let i = 1; i <= DURATIONS_KEPT + 5; i += 1) w = recordDuration(w, i * 1000);
    expect(w).toHaveLength(DURATIONS_KEPT);
    expect(w[0]).toBe(6000);
    expect(w.at(-1)).toBe((DURATIONS_KEPT + 5) * 1000);
    expect(w).toEqual(Array.from({ length: DURATIONS_KEPT }, (_, i) => (i + 6) * 1000));
    expect(medianDuration([5, 1, 100])).toBe(5);
    expect(medianDuration([])).toBeNull();
  });

  it("are recorded by the projection from successful attempts", () => {
    const p = projectionOf([
      ...declaredTask("t"),
      ...on(streamOf("t"), intended("t"), started("t"), succeeded("t")),
    ]);
    expect(p.durations.get(idOf("t"))).toEqual([10]);
  });
});

describe("the root cause of an interval not done", () => {
  it("given a grandparent that failed, is that grandparent, with its exit code and last line of stderr", () => {
    const p = projectionOf([...chain(), ...failedAt("ingest", "no such table orders")]);
    const c = rootCause(p, idOf("report"), DAY, END + MIN);
    expect(c).toMatchObject({
      task: idOf("ingest"),
      logicalDate: DAY,
      state: "failed",
      detail: "exit 3: no such table orders",
      path: [idOf("report"), idOf("clean"), idOf("ingest")],
    });
  });

  it("given a parent running, is that parent, running", () => {
    const p = projectionOf([...chain(), ...on(streamOf("ingest"), intended("ingest"), started("ingest"))]);
    expect(rootCause(p, idOf("report"), DAY, END + MIN)).toMatchObject({
      task: idOf("ingest"),
      state: "running",
    });
  });

  it("given a paused grandparent, is that one, paused with its reason", () => {
    const p = projectionOf([
      ...chain(),
      ...on(taskStream(keyOf("ingest")), {
        type: "TaskPaused",
        data: { key: keyOf("ingest"), reason: "vendor late" },
      }),
    ]);
    expect(rootCause(p, idOf("report"), DAY, END + MIN)).toMatchObject({
      task: idOf("ingest"),
      state: "paused",
      detail: "vendor late",
    });
  });

  it("given a parent held for its connection's only slot, says who holds it", () => {
    const p = projectionOf([
      ...on(connectionStream("pg"), {
        type: "ConnectionDeclared",
        data: { spec: connectionSpecSchema.parse({ name: "pg", maxParallelism: 1 }) },
      }),
      ...declaredTask("other", DAY, taskSpec("other", { connection: "pg" })),
      ...declaredTask("ingest", DAY, taskSpec("ingest", { connection: "pg" })),
      ...declaredTask("report", DAY, taskSpec("report", { parents: [keyOf("ingest")] })),
      ...on(streamOf("other"), {
        type: "DispatchIntended",
        data: { ...intended("other").data, connection: "pg" },
      } as DomainEvent),
    ]);
    const c = rootCause(p, idOf("report"), DAY, END + MIN);
    expect(c).toMatchObject({ task: idOf("ingest"), state: "held" });
    expect(describeCause(c, idOf("report"))).toBe(
      `it waits for ${idOf("ingest")} 2026-11-28T02:00Z, which is held: waiting for a slot on connection pg (1 of 1 in use: ${idOf("other")} since 2026-11-30T00:00:00Z)`,
    );
  });

  it("given the interval done, is done", () => {
    const p = projectionOf([
      ...declaredTask("t"),
      ...on(taskStream(keyOf("t")), {
        type: "IntervalCompleted",
        data: {
          key: keyOf("t"),
          logicalDate: DAY,
          nextLogicalDate: NEXT_DAY,
          nextRunDate: "2026-11-30T02:00:00.000Z",
        },
      }),
    ] as Given[]);
    expect(rootCause(p, idOf("t"), DAY, END).state).toBe("done");
  });
});

describe("the estimate", () => {
  it("is the longest remaining path, each task taking its median, none before its interval ends", () => {
    const p = projectionOf(chain());
    tookBefore(p, "ingest", 10 * MIN, 12 * MIN, 11 * MIN);
    tookBefore(p, "clean", 5 * MIN);
    tookBefore(p, "report", 20 * MIN);
    const e = estimateDone(p, p.durations, idOf("report"), DAY, END - 60 * MIN);
    expect(e.doneAt).toBe(END + (11 + 5 + 20) * MIN);
    expect(e.path.map((s) => [s.task, s.ms])).toEqual([
      [idOf("ingest"), 11 * MIN],
      [idOf("clean"), 5 * MIN],
      [idOf("report"), 20 * MIN],
    ]);
    expect(e.unknown).toEqual([]);
  });

  it("counts a running attempt for the rest of its median, and unknown durations as none", () => {
    const p = projectionOf([...chain(), ...on(streamOf("ingest"), intended("ingest"), started("ingest"))]);
    tookBefore(p, "ingest", 10 * MIN);
    // Started when recorded (the helper's RECORDED); asked 4 minutes later.
    const startedAt = p.instances.get(streamOf("ingest"))?.attempts[0]?.startedAt as string;
    const now = Date.parse(startedAt) + 4 * MIN;
    const e = estimateDone(p, p.durations, idOf("report"), DAY, now);
    expect(e.doneAt).toBe(now + 6 * MIN);
    expect(e.unknown.sort()).toEqual([idOf("clean"), idOf("report")]);
  });

  it("is none when an ancestor stands failed: it cannot be done without an operator", () => {
    const p = projectionOf([...chain(), ...failedAt("ingest", "boom")]);
    const e = estimateDone(p, p.durations, idOf("report"), DAY, END);
    expect(e).toMatchObject({ doneAt: null, blocked: idOf("ingest") });
  });
});

describe("the scheduler's watch over one deadline", () => {
  const DUE = END + 30 * MIN;
  const report = (p: SchedulerProjection) => p.tasks.get(idOf("report"));
  const watch = { logicalDate: DAY, due: DUE, riskRaised: false };

  it("given the deadline passed with the interval not done, says missed, naming the root cause", () => {
    const p = projectionOf([...chain(), ...failedAt("ingest", "no such table orders")]);
    const r = checkDeadline(p, p.durations, report(p) as never, watch, DUE);
    expect(r.kind).toBe("missed");
    if (r.kind === "missed")
      expect(r.reason).toBe(
        `30m deadline: it waits for ${idOf("ingest")} 2026-11-28T02:00Z, which failed (exit 3: no such table orders)`,
      );
  });

  it("given recorded durations that cannot fit before the deadline, says at risk, before it", () => {
    const p = tookBefore(projectionOf(chain()), "ingest", 40 * MIN);
    const r = checkDeadline(p, p.durations, report(p) as never, watch, END);
    expect(r).toMatchObject({ kind: "at_risk", recheckAt: DUE });
    if (r.kind === "at_risk") expect(r.reason).toContain("10m late");
  });

  it("given at risk already raised, waits for the deadline without saying it again", () => {
    const p = tookBefore(projectionOf(chain()), "ingest", 40 * MIN);
    expect(checkDeadline(p, p.durations, report(p) as never, { ...watch, riskRaised: true }, END)).toEqual({
      kind: "wait",
      recheckAt: DUE,
    });
  });

  it("given time to spare, looks again halfway through the slack", () => {
    const p = tookBefore(projectionOf(chain()), "ingest", 10 * MIN);
    // Done at END + 10m at the earliest: 20 minutes of slack, looked at again 10 minutes on.
    expect(checkDeadline(p, p.durations, report(p) as never, watch, END)).toEqual({
      kind: "wait",
      recheckAt: END + 10 * MIN,
    });
  });

  it("given the interval done, says done", () => {
    const p = projectionOf(chain());
    const moved = { ...(report(p) as NonNullable<ReturnType<typeof report>>), logicalDate: NEXT_DAY };
    expect(checkDeadline(p, p.durations, moved, watch, DUE + MIN)).toEqual({ kind: "done" });
  });
});

// (LoggedEvent kept in scope for the fold's type.)
export type _Logged = LoggedEvent;
