import {
  decideHalted,
  decideOutsideReport,
  decideTask,
  describeOutsideReport,
  explainTask,
  type OutsideReport,
  type OutsideReportDecision,
  type OutsideReportInput,
  type SchedulerProjection,
  taskStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  idOf,
  intervalCompleted,
  intervalReset,
  keyOf,
  NEXT_DAY,
  streamOf,
  taskSpec,
} from "./support/events.js";
import { type Given, instanceOf, on, projectionOf, specification } from "./support/specification.js";

const BY = "api:acme-drop";
/** The day after NEXT_DAY's interval ended: both DAY and NEXT_DAY are over. */
const LATER_MS = Date.parse("2026-12-02T00:00:00.000Z");
/** When DAY is over and NEXT_DAY is not (NEXT_DAY's interval ends 2026-11-30T02:00Z). */
const EARLY_MS = Date.parse("2026-11-30T00:00:00.000Z");

const outside = (name = "v"): Given[] =>
  declaredTask(name, DAY, taskSpec(name, { operator: { type: "external" } }));
const child = (name = "c", parent = "v"): Given[] =>
  declaredTask(name, DAY, taskSpec(name, { parents: [keyOf(parent)] }));

/** The decider's input as the shell reads it: the interval's stream folded from the whole log. */
function inputOf(
  history: readonly Given[],
  name: string,
  logicalDate: string,
  now: number,
): OutsideReportInput {
  const p = projectionOf(history);
  return {
    tasks: p.tasks,
    childrenOf: (t) => p.children.of(t),
    instances: p.instances,
    taskId: idOf(name),
    logicalDate,
    instance: instanceOf(history, streamOf(name, logicalDate)),
    run: null,
    now,
    by: BY,
  };
}

const spec = (name: string, logicalDate: string, now = LATER_MS) =>
  specification({
    fold: (history: readonly Given[]) => history,
    decide: (history: readonly Given[], report: OutsideReport) =>
      decideOutsideReport(inputOf(history, name, logicalDate, now), report),
  });

/** The history with the decision's writes appended, as the log would record them. */
function after(history: readonly Given[], d: OutsideReportDecision): Given[] {
  return [...history, ...d.writes.flatMap((w) => on(w.streamId, ...w.events))];
}

/** The history with the scheduler's next step for `name` written (a completion or a stop). */
function advanced(history: readonly Given[], name: string, now = LATER_MS): Given[] {
  const p = projectionOf(history);
  const d = decideTask(
    p,
    p.tasks.get(idOf(name)) as NonNullable<ReturnType<SchedulerProjection["tasks"]["get"]>>,
    now,
  );
  if (d.kind !== "complete" && d.kind !== "fail")
    throw new Error(`expected a step of ${name}, got ${d.kind}`);
  return [...history, ...on(taskStream(keyOf(name)), d.event)];
}

const report = (
  history: readonly Given[],
  date: string,
  r: OutsideReport,
  now = LATER_MS,
  name = "v",
): OutsideReportDecision => decideOutsideReport(inputOf(history, name, date, now), r);

const OK: OutsideReport = { outcome: "succeeded" };
const NO_FILE: OutsideReport = { outcome: "failed", reason: "no file in the drop" };

describe("decideOutsideReport: an outside task's interval reported by its producer", () => {
  it("given an awaited interval, when reported succeeded, then one write records it on its stream", () => {
    spec("v", DAY)
      .given(outside())
      .when(OK)
      .thenMatches((d) => {
        expect(d.writes).toEqual([
          {
            streamId: streamOf("v", DAY),
            expectedRevision: "no_stream",
            events: [
              {
                type: "IntervalReported",
                data: { key: keyOf("v"), logicalDate: DAY, outcome: "succeeded", by: BY },
              },
            ],
          },
        ]);
        expect(d).toMatchObject({ status: "recorded", awaited: DAY, before: null, reopened: [] });
      });
  });

  it("then the task completes the interval, and its child, blocked until then, is free to start", () => {
    const history = [...outside(), ...child()];
    const before = projectionOf(history);
    expect(decideTask(before, before.tasks.get(idOf("v")) as never, LATER_MS)).toEqual({
      kind: "held",
      hold: { on: "outside_report", task: idOf("v"), logicalDate: DAY },
    });
    const why = explainTask(before, idOf("c"), LATER_MS);
    expect(why.condition).toBe("blocked");
    expect(why.reasons).toEqual([`waits for an outside report of ${idOf("v")} 2026-11-28T02:00Z`]);
    expect(why.nextSteps.map((s) => s.command)).toEqual([
      `chronolog report ${idOf("v")} --interval ${DAY}`,
      `chronolog report ${idOf("v")} --interval ${DAY} --failed "say why"`,
    ]);
    const reported = after(history, report(history, DAY, OK));
    const p = projectionOf(reported);
    expect(decideTask(p, p.tasks.get(idOf("v")) as never, LATER_MS)).toMatchObject({
      kind: "complete",
      outcome: "success",
    });
    const done = projectionOf(advanced(reported, "v"));
    expect(done.tasks.get(idOf("v"))?.prevIntervalStart).toBe(DAY);
    expect(decideTask(done, done.tasks.get(idOf("c")) as never, LATER_MS).kind).toBe("ready");
  });

  it("an outside task is never ready to dispatch, whatever its parents", () => {
    // Its parent has finished the interval: a task run by Chronolog would be ready now.
    const withParent = [
      ...declaredTask("t"),
      ...intervalCompleted("t"),
      ...declaredTask("v", DAY, taskSpec("v", { operator: { type: "external" }, parents: [keyOf("t")] })),
    ];
    const q = projectionOf(withParent);
    expect(decideTask(q, q.tasks.get(idOf("v")) as never, LATER_MS)).toEqual({
      kind: "held",
      hold: { on: "outside_report", task: idOf("v"), logicalDate: DAY },
    });
    const p = projectionOf(outside());
    const d = decideTask(p, p.tasks.get(idOf("v")) as never, LATER_MS);
    expect(d.kind).toBe("held");
    const why = explainTask(p, idOf("v"), LATER_MS);
    expect(why.reasons[0]).toMatch(/^waits for an outside report of p\/a\/v\/ALL 2026-11-28T02:00Z/);
  });

  it("given an interval that has not ended, when reported, then it is refused", () => {
    spec("v", NEXT_DAY, EARLY_MS)
      .given(outside())
      .when(OK)
      .thenThrows("state", /has not ended yet \(it ends at 2026-11-30T02:00:00.000Z\)/);
  });

  it("given an instant that is not one of the task's intervals, when reported, then it is refused naming the nearest", () => {
    spec("v", "2026-11-28T03:00:00.000Z")
      .given(outside())
      .when(OK)
      .thenThrows("validation", /nearest/);
  });

  it("given a failure without a reason, when reported, then it is refused", () => {
    spec("v", DAY)
      .given(outside())
      .when({ outcome: "failed" })
      .thenThrows("validation", /says why/);
  });

  it("given a task that is unknown, not outside, or retired, when reported, then it is refused", () => {
    spec("nope", DAY)
      .given(outside())
      .when(OK)
      .thenThrows("not_found", /no task p\/a\/nope\/ALL/);
    spec("t", DAY)
      .given(declaredTask("t"))
      .when(OK)
      .thenThrows("state", /is not an outside task \(its operator is noop\)/);
    spec("v", DAY)
      .given(outside(), on(taskStream(keyOf("v")), { type: "TaskRetired", data: { key: keyOf("v") } }))
      .when(OK)
      .thenThrows("state", /is retired/);
  });
});

describe("decideOutsideReport: out of order, repeated, conflicting", () => {
  it("given the earlier interval awaited, when a later one is reported, then it is recorded and held", () => {
    const history = [...outside(), ...child()];
    const d = report(history, NEXT_DAY, OK);
    expect(d).toMatchObject({ status: "held", awaited: DAY });
    expect(describeOutsideReport(d)).toMatch(/held: it counts once p\/a\/v\/ALL .* are in/);
    const held = after(history, d);
    const p = projectionOf(held);
    // Still waiting for the earlier one, and saying what is held.
    const why = explainTask(p, idOf("v"), LATER_MS);
    expect(why.reasons[0]).toContain("held until it is in (its intervals complete in order): ");
    expect(why.reasons[0]).toContain(`2026-11-29T02:00Z reported succeeded by ${BY}`);
    // The child does not go on: the earlier interval is not in.
    expect(decideTask(p, p.tasks.get(idOf("c")) as never, LATER_MS).kind).toBe("blocked");

    // The earlier one comes in: the task completes it, then the held one.
    const both = advanced(after(held, report(held, DAY, OK)), "v");
    const next = projectionOf(both);
    expect(next.tasks.get(idOf("v"))?.logicalDate).toBe(NEXT_DAY);
    expect(decideTask(next, next.tasks.get(idOf("v")) as never, LATER_MS)).toMatchObject({
      kind: "complete",
      outcome: "success",
    });
    const last = projectionOf(advanced(both, "v"));
    expect(last.tasks.get(idOf("v"))?.prevIntervalStart).toBe(NEXT_DAY);
  });

  it("given an interval reported succeeded, when reported succeeded again, then nothing is written", () => {
    const history = after(outside(), report(outside(), DAY, OK));
    const d = report(history, DAY, OK);
    expect(d).toMatchObject({ status: "unchanged", writes: [], before: { outcome: "succeeded", by: BY } });
    expect(describeOutsideReport(d)).toMatch(
      /was already reported succeeded by api:acme-drop .*: nothing written/,
    );
  });

  it("given a completed interval reported succeeded, when reported succeeded again, then nothing is written", () => {
    const history = advanced(after(outside(), report(outside(), DAY, OK)), "v");
    expect(report(history, DAY, OK)).toMatchObject({ status: "unchanged", writes: [] });
  });

  it("given the task set back by a backfill past a report, when reported again, then it is recorded again", () => {
    const done = advanced(after(outside(), report(outside(), DAY, OK)), "v");
    const setBack = [...done, ...intervalReset("v", DAY)];
    const p = projectionOf(setBack);
    expect(decideTask(p, p.tasks.get(idOf("v")) as never, LATER_MS).kind).toBe("held");
    const d = report(setBack, DAY, OK);
    expect(d).toMatchObject({ status: "recorded", before: { outcome: "succeeded" } });
    expect(d.writes[0]?.expectedRevision).toBe(0n);
    const q = projectionOf(after(setBack, d));
    expect(decideTask(q, q.tasks.get(idOf("v")) as never, LATER_MS).kind).toBe("complete");
  });

  it("given an interval reported succeeded, when reported failed, then it is refused naming both", () => {
    spec("v", DAY)
      .given(after(outside(), report(outside(), DAY, OK)))
      .when(NO_FILE)
      .thenThrows("state", /was reported succeeded by api:acme-drop .*: a report of failed is refused/);
  });

  it("given an interval reported failed, then the task stops at it with the reason", () => {
    const history = after(outside(), report(outside(), DAY, NO_FILE));
    const stopped = advanced(history, "v");
    const p = projectionOf(stopped);
    expect(p.tasks.get(idOf("v"))?.failure).toMatchObject({
      logicalDate: DAY,
      state: "failed",
      reason: `reported failed by ${BY}: no file in the drop`,
    });
    const why = explainTask(p, idOf("v"), LATER_MS);
    expect(why.condition).toBe("failed");
    expect(why.reasons).toEqual([
      `stopped at 2026-11-28T02:00Z, failed: reported failed by ${BY}: no file in the drop`,
      `it goes on once 2026-11-28T02:00Z is reported succeeded (chronolog report ${idOf("v")} --interval ${DAY}), or marked`,
    ]);
    expect(why.nextSteps.map((s) => s.action)).toEqual([
      "report_succeeded",
      "mark_succeeded",
      "mark_skipped",
    ]);
    // A retry has nothing to run.
    expect(() =>
      decideHalted(
        { ...inputOf(stopped, "v", DAY, LATER_MS), instance: instanceOf(stopped, streamOf("v", DAY)) },
        { kind: "retry" },
      ),
    ).toThrow(/outside task: Chronolog never runs it/);
  });

  it("given an interval reported failed, when reported succeeded, then it is recorded and the task goes on", () => {
    const history = advanced(after(outside(), report(outside(), DAY, NO_FILE)), "v");
    const d = report(history, DAY, OK);
    expect(d).toMatchObject({ status: "recorded", before: { outcome: "failed", by: BY } });
    expect(d.writes[0]?.expectedRevision).toBe(0n);
    const p = projectionOf(after(history, d));
    expect(decideTask(p, p.tasks.get(idOf("v")) as never, LATER_MS)).toMatchObject({ kind: "complete" });
  });

  it("given the task past an interval never reported (moved on by hand), when reported, then it is refused", () => {
    const history = [
      ...outside(),
      ...on(taskStream(keyOf("v")), {
        type: "IntervalCompleted",
        data: {
          key: keyOf("v"),
          logicalDate: DAY,
          nextLogicalDate: NEXT_DAY,
          nextRunDate: "2026-11-30T02:00:00.000Z",
        },
      }),
    ];
    spec("v", DAY)
      .given(history)
      .when(OK)
      .thenThrows("state", /has moved past .* without a report of it/);
  });
});
