import {
  type DomainEvent,
  dateArg,
  decideIntervalCompleted,
  instanceStream,
  planBackfill,
  planCancelBackfill,
  runStream,
  type SchedulerProjection,
  taskStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { declaredTask, idOf, intended, keyOf, succeeded, taskSpec } from "./support/events.js";
import { type Given, on, projectionOf } from "./support/specification.js";

/**
 * A backfill's cancel: given a backfill under way (its resets folded in, as the log holds them),
 * when it is cancelled, then where each task goes, what it finishes first, and which intervals
 * of its runs are closed.
 */
const day = (n: number) => `2026-11-${String(n).padStart(2, "0")}T02:00:00.000Z`;

/** A daily 02:00 task `t` and its child `c`, both standing at the 28th (finished the 27th). */
const family: Given[] = [
  ...declaredTask("t", day(28)),
  ...declaredTask("c", day(28), taskSpec("c", { parents: [keyOf("t")] })),
  ...on(taskStream(keyOf("t")), reset(day(28), day(27))),
  ...on(taskStream(keyOf("c")), reset(day(28), day(27))),
];

function reset(logicalDate: string, prevIntervalStart: string): DomainEvent {
  return {
    type: "IntervalReset",
    data: {
      key: keyOf("t"),
      logicalDate,
      nextRunDate: day(Number(logicalDate.slice(8, 10)) + 1),
      prevIntervalStart,
      reason: "operator",
    },
  };
}

/** The history with backfill `b1` of 18..21 (downstream) written as planBackfill decides it. */
function backfilled(history: Given[]): Given[] {
  const p = projectionOf(history);
  const decided = planBackfill(p, {
    task: idOf("t"),
    from: dateArg("2026-11-18", "--from"),
    to: dateArg("2026-11-21", "--to"),
    downstream: true,
    force: false,
    backfillId: "b1",
  });
  if (decided.kind !== "planned") throw new Error(decided.message);
  return [...history, ...decided.writes.flatMap((w) => on(w.streamId, ...w.events))];
}

/** Applies a decision's writes, as the log would record them after the history. */
function applied(
  history: Given[],
  writes: ReadonlyArray<{ streamId: string; events: DomainEvent[] }>,
): Given[] {
  return [...history, ...writes.flatMap((w) => on(w.streamId, ...w.events))];
}

const cancel = (p: SchedulerProjection, reason?: string) =>
  planCancelBackfill(p, { backfillId: "b1", ...(reason ? { reason } : {}) });

describe("planCancelBackfill", () => {
  it("returns every task the backfill walks to where it stood before it", () => {
    const history = backfilled(fixKeys(family));
    const before = projectionOf(history);
    expect(before.tasks.get(idOf("t"))?.logicalDate).toBe(day(18));
    const decided = cancel(before, "wrong range");
    if (decided.kind !== "planned") throw new Error(decided.message);
    expect(decided.targets).toEqual([
      { task: idOf("t"), at: day(18), returnsTo: day(28) },
      { task: idOf("c"), at: day(18), returnsTo: day(28) },
    ]);
    expect(decided.runTasks).toEqual([]);
    expect(decided.writes.map((w) => w.events[0]?.data)).toEqual([
      expect.objectContaining({ reason: "backfill_cancelled", note: "wrong range", logicalDate: day(28) }),
      expect.objectContaining({ reason: "backfill_cancelled", logicalDate: day(28) }),
    ]);
    const after = projectionOf(applied(history, decided.writes));
    for (const name of ["t", "c"]) {
      const task = after.tasks.get(idOf(name));
      expect(task).toMatchObject({
        logicalDate: day(28),
        nextRunDate: day(29),
        prevIntervalStart: day(27),
        backfill: null,
      });
    }
    // Once cancelled, there is nothing left to cancel.
    expect(cancel(after)).toMatchObject({ kind: "refused", error: "not_found" });
  });

  it("lists the tasks upstream first, as the backfill walks them, whatever order they were declared in", () => {
    // The child declared before its parent, and a grandchild after both.
    const [tDeclared, cDeclared, tReset, cReset] = [
      family.slice(0, 1),
      family.slice(1, 2),
      family.slice(2, 3),
      family.slice(3, 4),
    ];
    const history = backfilled(
      fixKeys([
        ...(cDeclared as Given[]),
        ...(tDeclared as Given[]),
        ...declaredTask("g", day(28), taskSpec("g", { parents: [keyOf("c")] })),
        ...(cReset as Given[]),
        ...(tReset as Given[]),
      ]),
    );
    const p = projectionOf(history);
    expect([...p.tasks.keys()].slice(0, 2)).toEqual([idOf("c"), idOf("t")]);
    const decided = cancel(p);
    if (decided.kind !== "planned") throw new Error(decided.message);
    expect(decided.targets.map((t) => t.task)).toEqual([idOf("t"), idOf("c"), idOf("g")]);
  });

  it("lets a task finish the interval under way, then return: its window ends there", () => {
    const history = backfilled(fixKeys(family));
    const running = [...history, ...on(streamAt(18), intended("t", { logicalDate: day(18) }))];
    const decided = cancel(projectionOf(running));
    if (decided.kind !== "planned") throw new Error(decided.message);
    expect(decided.targets[0]).toEqual({
      task: idOf("t"),
      at: day(18),
      returnsTo: day(28),
      finishing: day(18),
    });
    expect(decided.writes[0]?.events[0]?.data).toMatchObject({
      reason: "backfill_cancelled",
      logicalDate: day(18),
      until: day(18),
      continues: true,
      resume: { logicalDate: day(28), nextRunDate: day(29), prevIntervalStart: day(27) },
    });
    // Its attempt still counts for it, and its success takes it back where it stood.
    const after = projectionOf(applied(running, decided.writes));
    const t = after.tasks.get(idOf("t"));
    if (!t) throw new Error("no task");
    expect(after.currentInstance(t)?.status).toBe("queued");
    const completed = decideIntervalCompleted(t, 1);
    expect(completed.data).toMatchObject({
      logicalDate: day(18),
      nextLogicalDate: day(28),
      nextRunDate: day(29),
    });
    const done = projectionOf([
      ...applied(running, decided.writes),
      ...on(streamAt(18), succeeded("t")),
      ...on(taskStream(keyOf("t")), completed),
    ]);
    expect(done.tasks.get(idOf("t"))).toMatchObject({
      logicalDate: day(28),
      prevIntervalStart: day(27),
      backfill: null,
    });
  });

  it("closes the intervals of the runs its walks will not come to now, of its range only", () => {
    const history = backfilled(fixKeys(family));
    // The 17th is before its range, the 28th is where they return (their schedule's again).
    const runs = [...runOn(17), ...runOn(18), ...runOn(19, "rerun"), ...runOn(28)];
    const decided = cancel(projectionOf([...history, ...runs]));
    if (decided.kind !== "planned") throw new Error(decided.message);
    expect(decided.runTasks.map((r) => [r.runId, r.task, r.event.type])).toEqual([
      [`w@${day(18)}`, idOf("t"), "InstanceCancelled"],
      [`w@${day(18)}`, idOf("c"), "InstanceCancelled"],
      [`w@${day(19)}`, idOf("t"), "InstanceCancelled"],
      [`w@${day(19)}`, idOf("c"), "InstanceCancelled"],
    ]);
    expect(decided.runTasks[0]?.event.data).toMatchObject({
      logicalDate: day(18),
      reason: "backfill b1 cancelled",
      runId: `w@${day(18)}`,
    });
    expect(decided.runTasks[0]?.streamId).toBe(instanceStream(keyOf("t"), day(18)));
  });

  it("a range that ended where the task stood returns it there, and closes no run of that date", () => {
    // Backfilled up to the 28th, where both stand: the window records where they stood all the same.
    const p0 = projectionOf(fixKeys(family));
    const decided0 = planBackfill(p0, {
      task: idOf("t"),
      from: dateArg("2026-11-26", "--from"),
      to: dateArg("2026-11-28", "--to"),
      downstream: true,
      force: false,
      backfillId: "b1",
    });
    if (decided0.kind !== "planned") throw new Error(decided0.message);
    expect(decided0.writes[0]?.events[0]?.data).toMatchObject({
      until: day(28),
      resume: { logicalDate: day(28), nextRunDate: day(29), prevIntervalStart: day(27) },
    });
    const history = [...fixKeys(family), ...decided0.writes.flatMap((w) => on(w.streamId, ...w.events))];
    const decided = cancel(projectionOf([...history, ...runOn(28)]));
    if (decided.kind !== "planned") throw new Error(decided.message);
    expect(decided.runTasks).toEqual([]);
    const after = projectionOf(applied(history, decided.writes));
    expect(after.tasks.get(idOf("c"))).toMatchObject({
      logicalDate: day(28),
      prevIntervalStart: day(27),
      backfill: null,
    });
  });

  it("leaves an outside task's interval to its producer's report", () => {
    const outside: Given[] = fixKeys([
      ...declaredTask("t", day(28)),
      ...declaredTask("c", day(28), taskSpec("c", { parents: [keyOf("t")], operator: { type: "external" } })),
      ...on(taskStream(keyOf("t")), reset(day(28), day(27))),
      ...on(taskStream(keyOf("c")), reset(day(28), day(27))),
    ]);
    const decided = cancel(projectionOf([...backfilled(outside), ...runOn(18)]));
    if (decided.kind !== "planned") throw new Error(decided.message);
    expect(decided.targets.map((t) => t.task)).toEqual([idOf("t"), idOf("c")]);
    expect(decided.runTasks.map((r) => r.task)).toEqual([idOf("t")]);
  });

  it("refuses a backfill no task walks", () => {
    expect(cancel(projectionOf(fixKeys(family)))).toEqual({
      kind: "refused",
      error: "not_found",
      message:
        "no task walks backfill b1: it has finished, was cancelled, or never started (chronolog task TASK shows a task's backfill and its id)",
    });
  });
});

const streamAt = (n: number) => instanceStream(keyOf("t"), day(n));

/** A run of workflow `w` on the `n`th, of both tasks, going (a backfill's try unless said). */
function runOn(n: number, trigger: "backfill" | "rerun" = "backfill"): Given[] {
  return on(runStream(`w@${day(n)}`), {
    type: "RunStarted",
    data: {
      runId: `w@${day(n)}`,
      workflow: "w",
      logicalDate: day(n),
      tasks: [keyOf("t"), keyOf("c")],
      trigger,
      params: {},
    },
  });
}

/** The family's operator resets name the task of their own stream. */
function fixKeys(history: Given[]): Given[] {
  return history.map((g) => {
    if (g.type !== "IntervalReset") return g;
    const name = g.streamId === taskStream(keyOf("c")) ? "c" : "t";
    return { ...g, data: { ...g.data, key: keyOf(name) } };
  });
}
