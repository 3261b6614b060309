import { type DomainEvent, evolveTask, planWindow, type TaskState, type WindowReset } from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { keyOf, taskSpec } from "./support/events.js";

/**
 * planWindow, given / when / then: given a daily task done through the 9th (standing at the
 * 10th) and what was reset and completed since, when a range is asked for, then where the task
 * is set back to, or the refusal. A range joins a pending window when it overlaps or touches
 * what the window has left to walk; a range apart from it is refused.
 */
const day = (n: number) => `2026-11-${String(n).padStart(2, "0")}T02:00:00.000Z`;
const ORIGINAL = { logicalDate: day(10), nextRunDate: day(11), prevIntervalStart: day(9) };

function fold(events: DomainEvent[]): TaskState {
  let state: TaskState | undefined;
  events.forEach((event, i) => {
    state = evolveTask(state, event, { revision: BigInt(i), position: BigInt(i) });
  });
  return state as TaskState;
}

const declared: DomainEvent = {
  type: "TaskDeclared",
  data: { key: keyOf("t"), spec: taskSpec("t"), logicalDate: day(10), nextRunDate: day(11) },
};
const done: DomainEvent = {
  type: "IntervalCompleted",
  data: { key: keyOf("t"), logicalDate: day(9), nextLogicalDate: day(10), nextRunDate: day(11) },
};

/** The reset a planned window writes, as a backfill with id `id` writes it. */
function reset(plan: WindowReset, id: string): DomainEvent {
  const { joins, from, until, resume, ...position } = plan;
  return {
    type: "IntervalReset",
    data: {
      key: keyOf("t"),
      ...position,
      reason: "backfill",
      until,
      ...(resume ? { resume } : {}),
      backfillId: joins?.backfillId ?? id,
      ...(from !== position.logicalDate ? { from } : {}),
    },
  };
}

function completed(n: number): DomainEvent {
  return {
    type: "IntervalCompleted",
    data: { key: keyOf("t"), logicalDate: day(n), nextLogicalDate: day(n + 1), nextRunDate: day(n + 2) },
  };
}

function planned(task: TaskState, first: number, last: number): WindowReset {
  const plan = planWindow(task, day(first), day(last));
  if (plan.kind !== "reset") throw new Error(plan.reason);
  return plan.reset;
}

/** The task with backfill `b1` over the 3rd..4th pending, after `walked` of its intervals. */
function pending(walked: number): DomainEvent[] {
  const history = [declared, done];
  history.push(reset(planned(fold(history), 3, 4), "b1"));
  for (let i = 0; i < walked; i++) history.push(completed(3 + i));
  return history;
}

describe("planWindow", () => {
  it("with nothing pending: walks the range and returns to where the task stands", () => {
    expect(planned(fold([declared, done]), 3, 4)).toEqual({
      logicalDate: day(3),
      nextRunDate: day(4),
      prevIntervalStart: day(2),
      from: day(3),
      until: day(4),
      resume: ORIGINAL,
      joins: null,
    });
  });

  it("a range touching what is left joins it: union range, walk from where it is, the first resume point", () => {
    const task = fold(pending(1));
    const plan = planned(task, 5, 6);
    expect(plan).toMatchObject({
      logicalDate: day(4),
      prevIntervalStart: day(3),
      from: day(3),
      until: day(6),
      resume: ORIGINAL,
    });
    expect(plan.joins?.backfillId).toBe("b1");
    // Folded, the window keeps the first backfill's id and range start; done, the task returns.
    const history = [...pending(1), reset(plan, "b2"), completed(4), completed(5)];
    expect(fold(history).backfill).toMatchObject({ backfillId: "b1", from: day(3), until: day(6) });
    const returned: DomainEvent = {
      type: "IntervalCompleted",
      data: { key: keyOf("t"), logicalDate: day(6), nextLogicalDate: day(10), nextRunDate: day(11) },
    };
    const back = fold([...history, returned]);
    expect(back).toMatchObject({ ...ORIGINAL, backfill: null });
  });

  it("a range ending just before the interval the walk is at joins it, walking from the range's start", () => {
    const plan = planned(fold(pending(1)), 1, 3);
    expect(plan).toMatchObject({ logicalDate: day(1), from: day(1), until: day(4), resume: ORIGINAL });
  });

  it("a range reaching past the resume point drops it: the walk goes on from the range's end", () => {
    const plan = planned(fold(pending(0)), 4, 12);
    expect(plan).toMatchObject({ logicalDate: day(3), until: day(12) });
    expect(plan.resume).toBeUndefined();
  });

  it("a range before an interval already walked again is refused: it would run that one unnamed", () => {
    const plan = planWindow(fold(pending(1)), day(2), day(2));
    expect(plan).toEqual({
      kind: "refused",
      reason: expect.stringContaining(
        `backfill b1 over ${day(3)} .. ${day(4)} is pending on p/a/t/ALL: 1 of 2 intervals done, next ${day(4)}`,
      ),
    });
  });

  it("a range after a gap is refused", () => {
    const plan = planWindow(fold(pending(0)), day(6), day(7));
    expect(plan.kind).toBe("refused");
    expect(plan.kind === "refused" && plan.reason).toContain(
      `${day(6)} .. ${day(7)} neither overlaps nor touches what it has left (${day(3)} .. ${day(4)})`,
    );
  });
});
