import {
  type BackfillDecision,
  type DateArg,
  dateArg,
  planBackfill,
  planTrigger,
  type RunPlanDecision,
  runIdOn,
  type SchedulerProjection,
  taskStream,
  tasksRunningDate,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  declaredTask,
  declaredWorkflow,
  idOf,
  instance,
  intended,
  keyOf,
  runStarted,
  taskSpec,
} from "./support/events.js";
import { type Given, on, projectionOf, specification } from "./support/specification.js";

/**
 * The planners, given / when / then: given the tasks' histories, when an operation is asked
 * for, then every task and interval it resets (with what the task's own rules changed) and the
 * writes, or the refusal, decided before anything is written.
 */
const day = (n: number) => `2026-11-${String(n).padStart(2, "0")}T02:00:00.000Z`;
const d = (text: string): DateArg => dateArg(text, "--from");

/** A daily 02:00 task `t` from the 1st; its child `c` declared to start on the 20th. */
function family(child: Parameters<typeof taskSpec>[1] = {}): Given[] {
  return [
    ...declaredTask("t", day(28)),
    ...declaredTask(
      "c",
      day(28),
      taskSpec("c", { parents: [keyOf("t")], startDate: "2026-11-20T00:00:00.000Z", ...child }),
    ),
  ];
}

const backfill = specification({
  fold: projectionOf,
  decide: (
    p: SchedulerProjection,
    q: { from: string; to: string; force?: boolean; downstream?: boolean },
  ): BackfillDecision =>
    planBackfill(p, {
      task: idOf("t"),
      from: d(q.from),
      to: dateArg(q.to, "--to"),
      downstream: q.downstream ?? true,
      force: !!q.force,
      backfillId: "b1",
    }),
});

describe("planBackfill", () => {
  it("holds each descendant to its own startDate, says so, and resets only from there", () => {
    backfill
      .given(family())
      .when({ from: "2026-11-18", to: "2026-11-21" })
      .thenMatches((decision) => {
        expect(decision.kind).toBe("planned");
        if (decision.kind !== "planned") return;
        expect(decision.targets).toEqual([
          { task: idOf("t"), from: day(18), until: day(21), intervals: 4, backfillId: "b1", notes: [] },
          {
            task: idOf("c"),
            from: day(20),
            until: day(21),
            intervals: 2,
            backfillId: "b1",
            notes: [
              "from its startDate 2026-11-20T00:00Z: 2 intervals from 2026-11-18T02:00Z before it not reset (--force resets them too)",
            ],
          },
        ]);
        expect(decision.writes.map((w) => [w.streamId, w.events[0]?.data])).toEqual([
          [taskStream(keyOf("t")), expect.objectContaining({ logicalDate: day(18), until: day(21) })],
          [taskStream(keyOf("c")), expect.objectContaining({ logicalDate: day(20), until: day(21) })],
        ]);
      });
  });

  it("--force lifts the start dates for all, and says so", () => {
    backfill
      .given(family())
      .when({ from: "2026-11-18", to: "2026-11-21", force: true })
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.targets[1]).toMatchObject({
          task: idOf("c"),
          from: day(18),
          intervals: 4,
          notes: ["--force: from 2026-11-18T02:00Z, before its startDate 2026-11-20T00:00Z"],
        });
      });
  });

  it("skips a descendant the range lies wholly before, and a retired one; resets no interval of theirs", () => {
    backfill
      .given(family())
      .when({ from: "2026-11-10", to: "2026-11-12" })
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.targets.map((t) => t.task)).toEqual([idOf("t")]);
        expect(decision.skipped).toEqual([
          {
            task: idOf("c"),
            reason: "the range is before its startDate 2026-11-20T00:00Z (--force runs it anyway)",
          },
        ]);
        expect(decision.writes).toHaveLength(1);
      });
    backfill
      .given(family(), on(taskStream(keyOf("c")), { type: "TaskRetired", data: { key: keyOf("c") } }))
      .when({ from: "2026-11-20", to: "2026-11-21" })
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.skipped).toEqual([{ task: idOf("c"), reason: "retired: it runs nothing" }]);
      });
  });

  it("never resets intervals after a task's endDate, force or not", () => {
    backfill
      .given(family({ endDate: "2026-11-21T00:00:00.000Z" }))
      .when({ from: "2026-11-20", to: "2026-11-24", force: true })
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.targets[1]).toMatchObject({
          task: idOf("c"),
          from: day(20),
          until: day(20),
          intervals: 1,
          notes: [
            "until its endDate 2026-11-21T00:00Z: intervals after 2026-11-20T02:00Z never run and are not reset",
          ],
        });
      });
  });

  it("refuses the named task's range before its own startDate, and a paused task, unless --force", () => {
    backfill
      .given(declaredTask("t", day(28), taskSpec("t", { startDate: "2026-11-20T00:00:00.000Z" })))
      .when({ from: "2026-11-18", to: "2026-11-21" })
      .then({
        kind: "refused",
        error: "validation",
        field: "--from",
        message: `2026-11-18 is before ${idOf("t")}'s startDate 2026-11-20T00:00:00.000Z: intervals it was never declared for (use --force to run them anyway)`,
      });
    const paused = on(taskStream(keyOf("c")), { type: "TaskPaused", data: { key: keyOf("c") } });
    backfill
      .given(family(), paused)
      .when({ from: "2026-11-20", to: "2026-11-21" })
      .thenMatches((decision) => {
        expect(decision).toMatchObject({ kind: "refused", error: "state" });
        expect(decision.kind === "refused" && decision.message).toContain(`${idOf("c")} is paused`);
      });
    backfill
      .given(family(), paused)
      .when({ from: "2026-11-20", to: "2026-11-21", force: true })
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.targets[1]?.notes).toEqual([
          `paused: its intervals wait for \`chronolog resume ${idOf("c")}\``,
        ]);
      });
  });

  it("a --to before --from is refused, naming both", () => {
    backfill.given(family()).when({ from: "2026-11-21", to: "2026-11-20T00:00Z" }).then({
      kind: "refused",
      error: "validation",
      field: "--to",
      message: "2026-11-20T00:00Z is before --from 2026-11-21",
    });
  });

  it("a window stopped at a failed interval is taken over, and said to be stopped, not pending", () => {
    const rerunOf20: Given[] = on(taskStream(keyOf("t")), {
      type: "IntervalReset",
      data: {
        key: keyOf("t"),
        logicalDate: day(20),
        nextRunDate: day(21),
        prevIntervalStart: day(19),
        reason: "operator",
        until: day(20),
        resume: { logicalDate: day(28), nextRunDate: day(29), prevIntervalStart: day(27) },
      },
    });
    const failed20: Given[] = on(taskStream(keyOf("t")), {
      type: "IntervalFailed",
      data: { key: keyOf("t"), logicalDate: day(20), state: "failed", reason: "exited with code 1" },
    });
    backfill
      .given(declaredTask("t", day(28)), rerunOf20, failed20)
      .when({ from: "2026-11-20", to: "2026-11-20", downstream: false })
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.targets[0]?.merged).toEqual({
          how: "took_over",
          was: `a rerun over ${day(20)} .. ${day(20)} stopped on ${idOf("t")} at ${day(20)} (failed): 0 of 1 interval done`,
          from: day(20),
          until: day(20),
        });
      });
  });
});

/** A workflow `w` of `a` and its child `b`, daily at 02:00, standing at the 28th. */
const workflow: Given[] = [
  ...declaredWorkflow("w", "skip_dependents"),
  ...declaredTask("a", day(28), taskSpec("a", { workflow: "w" })),
  ...declaredTask("b", day(28), taskSpec("b", { workflow: "w", parents: [keyOf("a")] })),
];

const trigger = specification({
  fold: projectionOf,
  decide: (p: SchedulerProjection, logicalDate: string): RunPlanDecision =>
    planTrigger(p, {
      workflow: "w",
      logicalDate,
      params: {},
      existing: {
        run: p.runs.get(`w@${logicalDate}`),
        revision: p.runs.get(`w@${logicalDate}`)?.revision ?? "no_stream",
      },
    }),
});

describe("planTrigger", () => {
  it("starts exactly the run it names: every task at that interval, returning afterwards", () => {
    trigger
      .given(workflow)
      .when(day(25))
      .thenMatches((decision) => {
        if (decision.kind !== "planned") throw new Error(decision.message);
        expect(decision.plan).toMatchObject({ runId: `w@${day(25)}`, try: 1, trigger: "manual", kept: [] });
        expect(decision.plan.tasks).toEqual([idOf("a"), idOf("b")]);
        expect(decision.plan.intervals).toEqual([
          {
            task: idOf("a"),
            interval: day(25),
            notes: ["afterwards it returns to 2026-11-28T02:00Z, where it stands now"],
          },
          {
            task: idOf("b"),
            interval: day(25),
            notes: ["afterwards it returns to 2026-11-28T02:00Z, where it stands now"],
          },
        ]);
        expect(decision.writes.map((w) => w.events[0]?.type)).toEqual([
          "RunStarted",
          "IntervalReset",
          "IntervalReset",
        ]);
      });
  });

  it("is refused, naming it, by a backfill pending over other dates of a task", () => {
    const pending = on(taskStream(keyOf("b")), {
      type: "IntervalReset",
      data: {
        key: keyOf("b"),
        logicalDate: day(24),
        nextRunDate: day(25),
        prevIntervalStart: day(23),
        reason: "backfill",
        until: day(25),
        backfillId: "b9",
      },
    });
    trigger
      .given(workflow, pending)
      .when(day(25))
      .thenMatches((decision) => {
        expect(decision).toMatchObject({ kind: "refused", error: "state" });
        expect(decision.kind === "refused" && decision.message).toContain(
          `trigger of w@${day(25)} refused: backfill b9 over ${day(24)} .. ${day(25)} is pending on ${idOf("b")}: 0 of 2 intervals done, next ${day(24)}; a trigger starts only the run it names`,
        );
      });
  });

  it("is refused by a paused task and by the run running already", () => {
    trigger
      .given(workflow, on(taskStream(keyOf("a")), { type: "TaskPaused", data: { key: keyOf("a") } }))
      .when(day(25))
      .thenMatches((decision) => {
        expect(decision.kind === "refused" && decision.message).toContain(`${idOf("a")} is paused`);
      });
    trigger
      .given(workflow, runStarted("w", ["a", "b"]))
      .when("2026-11-28T02:00:00.000Z")
      .thenMatches((decision) => {
        expect(decision.kind === "refused" && decision.message).toContain(
          "run w@2026-11-28T02:00:00.000Z is already running (try 1, schedule): wait for it to finish",
        );
      });
  });

  it("an attempt in flight at a task's interval refuses it: the interval would run again", () => {
    trigger
      .given(workflow, instance("a", intended("a")))
      .when(day(25))
      .thenMatches((decision) => {
        expect(decision.kind === "refused" && decision.message).toContain(
          "wait for the running intervals to finish",
        );
      });
  });
});

describe("runIdOn", () => {
  it("a day names the workflow's interval that starts on it; an instant, or an unknown workflow, as before", () => {
    const p = projectionOf(workflow);
    expect(runIdOn(p, "w@2026-11-25")).toBe(`w@${day(25)}`);
    expect(runIdOn(p, "w@2026-11-25T00:00Z")).toBe("w@2026-11-25T00:00:00.000Z");
    expect(runIdOn(p, "nope@2026-11-25")).toBe("nope@2026-11-25T00:00:00.000Z");
  });
});

describe("tasksRunningDate", () => {
  it("is the tasks standing at the date, or whose window walks to it; not a sibling left where it was", () => {
    const walking = on(taskStream(keyOf("a")), {
      type: "IntervalReset",
      data: {
        key: keyOf("a"),
        logicalDate: day(20),
        nextRunDate: day(21),
        prevIntervalStart: day(19),
        reason: "backfill",
        until: day(22),
        backfillId: "b1",
      },
    });
    const p = projectionOf([...workflow, ...walking]);
    expect(tasksRunningDate(p.tasks.values(), "w", day(21)).map((t) => t.id)).toEqual([idOf("a")]);
    expect(tasksRunningDate(p.tasks.values(), "w", day(23)).map((t) => t.id)).toEqual([]);
    expect(tasksRunningDate(p.tasks.values(), "w", day(28)).map((t) => t.id)).toEqual([idOf("b")]);
  });
});
