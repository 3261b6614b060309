import { describe, expect, it } from "vitest";
import {
  advanceOnSuccess,
  describeGateReason,
  evaluateGate,
  expectedParentSlot,
  type FailedState,
  type GateChild,
  type GateParentState,
  type GateReason,
  isDue,
  type ParentStatus,
  plainExpected,
  plainGatePasses,
  resetTo,
  type SchedulePosition,
  type TaskKey,
} from "../src/index.js";

const ordersRaw: TaskKey = { project: "sales", account: "acme", name: "orders_raw", partition: "ALL" };
const otherProject: TaskKey = { project: "finance", account: "corp", name: "ledger", partition: "eu" };

interface Row {
  name: string;
  child: { cron: string; logicalDate: string; timezone?: string };
  /** `undefined`: no task has the parent's key. */
  parent:
    | {
        cron: string;
        prev: string | null;
        timezone?: string;
        status?: ParentStatus;
        failed?: { logicalDate: string; state: FailedState };
      }
    | undefined;
  key?: TaskKey;
  open: boolean;
  reason?: Partial<GateReason> & { kind: GateReason["kind"] };
  /** What the plain rule answers, where it is worth stating. */
  plain?: boolean;
}

const rows: Row[] = [
  // Daily child of a daily parent, both at 02:00.
  {
    name: "daily/daily: parent finished the same slot",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-28T02:00:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "daily/daily: inclusive boundary, a child exactly on the parent slot needs that slot",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-27T02:00:00.000Z" },
    open: false,
    reason: {
      kind: "parent_behind",
      expected: "2026-11-28T02:00:00.000Z",
      actual: "2026-11-27T02:00:00.000Z",
    },
    plain: false,
  },
  {
    name: "daily/daily: one day behind blocks",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-26T02:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T02:00:00.000Z" },
    plain: false,
  },
  {
    name: "daily/daily: a parent ahead of the child passes",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-30T02:00:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "daily/daily: a parent that finished nothing blocks",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: null },
    open: false,
    reason: { kind: "parent_behind", actual: null },
    plain: false,
  },
  // Weekly parent (Sunday 00:00) of a daily child: the week that covers the child's day.
  {
    name: "weekly parent satisfies a daily child (Wednesday in the week of Sunday 22nd)",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-25T00:00:00.000Z" },
    parent: { cron: "0 0 * * 0", prev: "2026-11-22T00:00:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "weekly parent a week behind blocks a daily child",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-25T00:00:00.000Z" },
    parent: { cron: "0 0 * * 0", prev: "2026-11-15T00:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-22T00:00:00.000Z" },
    plain: false,
  },
  {
    name: "weekly parent, child on the Saturday whose interval ends on the next Sunday slot",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: { cron: "0 0 * * 0", prev: "2026-11-22T00:00:00.000Z" },
    open: true,
    plain: true,
  },
  // Hourly parent of a daily child: all 24 hours.
  {
    name: "hourly parent, daily child: all 24 hours finished",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: { cron: "0 * * * *", prev: "2026-11-28T23:00:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "hourly parent, daily child: 23 of 24 hours blocks (the plain rule let it through)",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: { cron: "0 * * * *", prev: "2026-11-28T22:00:00.000Z" },
    open: false,
    reason: {
      kind: "parent_behind",
      expected: "2026-11-28T23:00:00.000Z",
      actual: "2026-11-28T22:00:00.000Z",
    },
    plain: true,
  },
  {
    name: "hourly parent, daily child: only the first hour finished (all the plain rule asked for)",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: { cron: "0 * * * *", prev: "2026-11-28T00:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T23:00:00.000Z" },
    plain: true,
  },
  // */15 parent of an hourly child: four quarters.
  {
    name: "*/15 parent, hourly child: all four quarters",
    child: { cron: "0 * * * *", logicalDate: "2026-11-28T10:00:00.000Z" },
    parent: { cron: "*/15 * * * *", prev: "2026-11-28T10:45:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "*/15 parent, hourly child: three quarters block (the plain rule let it through)",
    child: { cron: "0 * * * *", logicalDate: "2026-11-28T10:00:00.000Z" },
    parent: { cron: "*/15 * * * *", prev: "2026-11-28T10:30:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T10:45:00.000Z" },
    plain: true,
  },
  // Step crons keep their step: the plain rule truncated `0 */6 * * *` to the day.
  {
    name: "0 */6 parent, 0 */6 child at 18:00: parent at 12:00 blocks (the plain rule's day truncation passed it)",
    child: { cron: "0 */6 * * *", logicalDate: "2026-11-28T18:00:00.000Z" },
    parent: { cron: "0 */6 * * *", prev: "2026-11-28T12:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T18:00:00.000Z" },
    plain: true,
  },
  {
    name: "0 */6 parent, 0 */6 child at 18:00: parent at 18:00 passes",
    child: { cron: "0 */6 * * *", logicalDate: "2026-11-28T18:00:00.000Z" },
    parent: { cron: "0 */6 * * *", prev: "2026-11-28T18:00:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "0 */6 parent, daily child: needs the 18:00 quarter of the day",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: { cron: "0 */6 * * *", prev: "2026-11-28T12:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T18:00:00.000Z" },
    plain: true,
  },
  {
    name: "*/15 parent, */15 child: the plain rule's hour truncation passed a parent 45 minutes behind",
    child: { cron: "*/15 * * * *", logicalDate: "2026-11-28T10:45:00.000Z" },
    parent: { cron: "*/15 * * * *", prev: "2026-11-28T10:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T10:45:00.000Z" },
    plain: true,
  },
  // Daily 02:00 parent of a daily 03:00 child: the plain rule's answer is kept.
  {
    name: "daily 02:00 parent, daily 03:00 child: same day's 02:00 passes",
    child: { cron: "0 3 * * *", logicalDate: "2026-11-28T03:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-28T02:00:00.000Z" },
    open: true,
    plain: true,
  },
  {
    name: "daily 02:00 parent, daily 03:00 child: previous day's 02:00 blocks",
    child: { cron: "0 3 * * *", logicalDate: "2026-11-28T03:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-27T02:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-28T02:00:00.000Z" },
    plain: false,
  },
  // Failure.
  {
    name: "parent failed the interval the child needs: blocks",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: {
      cron: "0 2 * * *",
      prev: "2026-11-27T02:00:00.000Z",
      failed: { logicalDate: "2026-11-28T02:00:00.000Z", state: "failed" },
    },
    open: false,
    reason: { kind: "parent_failed", logicalDate: "2026-11-28T02:00:00.000Z", state: "failed" },
  },
  {
    name: "hourly parent failed an hour inside the daily child's day: blocks",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: {
      cron: "0 * * * *",
      prev: "2026-11-28T04:00:00.000Z",
      failed: { logicalDate: "2026-11-28T05:00:00.000Z", state: "upstream_failed" },
    },
    open: false,
    reason: { kind: "parent_failed", state: "upstream_failed", expected: "2026-11-28T23:00:00.000Z" },
  },
  {
    name: "parent finished the child's interval but failed a later one: does NOT block",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: {
      cron: "0 2 * * *",
      prev: "2026-11-28T02:00:00.000Z",
      failed: { logicalDate: "2026-11-29T02:00:00.000Z", state: "abandoned" },
    },
    open: true,
  },
  {
    name: "a failure after the needed interval is reported as behind, not failed",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: {
      cron: "0 2 * * *",
      prev: "2026-11-27T02:00:00.000Z",
      failed: { logicalDate: "2026-11-30T02:00:00.000Z", state: "cancelled" },
    },
    open: false,
    reason: { kind: "parent_behind" },
  },
  // Missing, other project, status.
  {
    name: "parent missing: blocks with a reason",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: undefined,
    open: false,
    reason: { kind: "parent_missing", parent: ordersRaw },
  },
  {
    name: "parent in another project works by key",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 1 * * *", prev: "2026-11-28T01:00:00.000Z" },
    key: otherProject,
    open: true,
  },
  {
    name: "parent in another project, behind: the reason names its key",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 1 * * *", prev: "2026-11-27T01:00:00.000Z" },
    key: otherProject,
    open: false,
    reason: { kind: "parent_behind", parent: otherProject },
  },
  {
    name: "parent in another time zone: Berlin midnight parent of a UTC midnight child",
    child: { cron: "0 0 * * *", logicalDate: "2026-11-28T00:00:00.000Z" },
    parent: { cron: "0 0 * * *", timezone: "Europe/Berlin", prev: "2026-11-26T23:00:00.000Z" },
    open: false,
    reason: { kind: "parent_behind", expected: "2026-11-27T23:00:00.000Z" },
  },
  {
    name: "paused parent behind: blocks, says it is paused",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-27T02:00:00.000Z", status: "paused" },
    open: false,
    reason: { kind: "parent_behind", paused: true },
  },
  {
    name: "paused parent that finished the interval: passes",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-28T02:00:00.000Z", status: "paused" },
    open: true,
  },
  {
    name: "retired parent behind: blocks as retired",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-27T02:00:00.000Z", status: "retired" },
    open: false,
    reason: { kind: "parent_retired", expected: "2026-11-28T02:00:00.000Z" },
  },
  {
    name: "retired parent that finished the interval: passes",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", prev: "2026-11-28T02:00:00.000Z", status: "retired" },
    open: true,
  },
  {
    name: "off-grid prevIntervalStart truncates to the parent's slot",
    child: { cron: "0 * * * *", logicalDate: "2026-11-28T10:00:00.000Z" },
    parent: { cron: "0 * * * *", prev: "2026-11-28T10:30:00.000Z" },
    open: true,
  },
  {
    name: "a parent with an unusable schedule blocks with a reason",
    child: { cron: "0 2 * * *", logicalDate: "2026-11-28T02:00:00.000Z" },
    parent: { cron: "0 2 * * *", timezone: "Mars/Olympus", prev: "2026-11-28T02:00:00.000Z" },
    open: false,
    reason: { kind: "parent_schedule_invalid" },
  },
];

function stateOf(parent: NonNullable<Row["parent"]>): GateParentState {
  return {
    cron: parent.cron,
    timezone: parent.timezone ?? "UTC",
    status: parent.status ?? "active",
    prevIntervalStart: parent.prev,
    ...(parent.failed ? { failedInterval: parent.failed } : {}),
  };
}

describe("evaluateGate", () => {
  it.each(rows)("$name", (row) => {
    const child: GateChild = { timezone: "UTC", ...row.child };
    const key = row.key ?? ordersRaw;
    const decision = evaluateGate(child, [{ key, state: row.parent && stateOf(row.parent) }]);
    expect(decision.open).toBe(row.open);
    if (!decision.open) {
      expect(decision.reasons).toHaveLength(1);
      expect(decision.reasons[0]).toMatchObject({ parent: key, ...row.reason });
    }
    if (row.plain !== undefined && row.parent) {
      const { cron, timezone = "UTC", prev } = row.parent;
      expect(plainGatePasses(cron, timezone, prev, row.child.logicalDate)).toBe(row.plain);
    }
  });

  it("opens with no parents", () => {
    expect(
      evaluateGate({ cron: "0 2 * * *", timezone: "UTC", logicalDate: "2026-11-28T02:00:00.000Z" }, []),
    ).toEqual({
      open: true,
    });
  });

  it("reports every blocking parent, in declaration order", () => {
    const child: GateChild = { cron: "0 2 * * *", timezone: "UTC", logicalDate: "2026-11-28T02:00:00.000Z" };
    const decision = evaluateGate(child, [
      { key: otherProject, state: undefined },
      {
        key: { ...ordersRaw, name: "fine" },
        state: stateOf({ cron: "0 2 * * *", prev: "2026-11-28T02:00:00.000Z" }),
      },
      { key: ordersRaw, state: stateOf({ cron: "0 2 * * *", prev: null }) },
    ]);
    expect(decision).toEqual({
      open: false,
      reasons: [
        { kind: "parent_missing", parent: otherProject },
        {
          kind: "parent_behind",
          parent: ordersRaw,
          expected: "2026-11-28T02:00:00.000Z",
          actual: null,
          paused: false,
        },
      ],
    });
  });
});

describe("expected parent slot", () => {
  it("is the plain rule's for equal and coarser parents, later for finer ones", () => {
    const utc = (cron: string) => ({ cron, timezone: "UTC" });
    const daily: GateChild = { cron: "0 0 * * *", timezone: "UTC", logicalDate: "2026-11-25T00:00:00.000Z" };
    // Equal and coarser: unchanged.
    for (const parent of ["0 0 * * *", "0 0 * * 0", "0 0 1 * *"]) {
      expect(expectedParentSlot(daily, utc(parent))).toBe(plainExpected(parent, "UTC", daily.logicalDate));
    }
    // Finer: the last parent interval that ends by the child's interval end.
    expect(plainExpected("0 * * * *", "UTC", daily.logicalDate)).toBe("2026-11-25T00:00:00.000Z");
    expect(expectedParentSlot(daily, utc("0 * * * *"))).toBe("2026-11-25T23:00:00.000Z");
    expect(expectedParentSlot(daily, utc("0 */6 * * *"))).toBe("2026-11-25T18:00:00.000Z");
    const offset: GateChild = { cron: "0 3 * * *", timezone: "UTC", logicalDate: "2026-11-28T03:00:00.000Z" };
    expect(expectedParentSlot(offset, utc("0 2 * * *"))).toBe("2026-11-28T02:00:00.000Z");
  });

  it("plainExpected is inclusive: a child on a parent slot resolves to that slot", () => {
    expect(plainExpected("0 2 * * *", "UTC", "2026-11-28T02:00:00.000Z")).toBe("2026-11-28T02:00:00.000Z");
    expect(plainExpected("0 2 * * *", "UTC", "2026-11-28T01:59:59.000Z")).toBe("2026-11-27T02:00:00.000Z");
  });
});

describe("describeGateReason", () => {
  const key = ordersRaw;
  it.each<[GateReason, string]>([
    [
      {
        kind: "parent_behind",
        parent: key,
        expected: "2026-11-28T02:00:00.000Z",
        actual: "2026-11-27T02:00:00.000Z",
        paused: false,
      },
      "waiting for sales/acme/orders_raw/ALL to finish 2026-11-28T02:00Z; it has finished 2026-11-27T02:00Z",
    ],
    [
      {
        kind: "parent_behind",
        parent: key,
        expected: "2026-11-28T02:00:00.000Z",
        actual: null,
        paused: false,
      },
      "waiting for sales/acme/orders_raw/ALL to finish 2026-11-28T02:00Z; it has finished nothing yet",
    ],
    [
      {
        kind: "parent_behind",
        parent: key,
        expected: "2026-11-28T02:00:00.000Z",
        actual: null,
        paused: true,
      },
      "waiting for sales/acme/orders_raw/ALL to finish 2026-11-28T02:00Z; it has finished nothing yet (it is paused)",
    ],
    [{ kind: "parent_missing", parent: key }, "parent sales/acme/orders_raw/ALL is not declared"],
    [
      {
        kind: "parent_failed",
        parent: key,
        logicalDate: "2026-11-28T02:00:00.000Z",
        state: "failed",
        expected: "2026-11-28T02:00:00.000Z",
      },
      "waiting for sales/acme/orders_raw/ALL to finish 2026-11-28T02:00Z; its interval 2026-11-28T02:00Z is failed",
    ],
    [
      {
        kind: "parent_retired",
        parent: otherProject,
        expected: "2026-11-28T02:00:00.000Z",
        actual: "2026-11-20T02:00:00.000Z",
      },
      "parent finance/corp/ledger/eu is retired and will not finish 2026-11-28T02:00Z; it has finished 2026-11-20T02:00Z",
    ],
    [
      { kind: "parent_schedule_invalid", parent: key, message: "invalid time zone" },
      "parent sales/acme/orders_raw/ALL has an unusable schedule: invalid time zone",
    ],
  ])("%#: %s", (reason, text) => {
    expect(describeGateReason(reason)).toBe(text);
  });

  it("renders what evaluateGate returns", () => {
    const decision = evaluateGate(
      { cron: "0 2 * * *", timezone: "UTC", logicalDate: "2026-11-28T02:00:00.000Z" },
      [
        {
          key,
          state: {
            cron: "0 2 * * *",
            timezone: "UTC",
            status: "active",
            prevIntervalStart: "2026-11-27T02:00:00.000Z",
          },
        },
      ],
    );
    expect(decision.open).toBe(false);
    if (decision.open) return;
    expect(decision.reasons.map(describeGateReason)).toEqual([
      "waiting for sales/acme/orders_raw/ALL to finish 2026-11-28T02:00Z; it has finished 2026-11-27T02:00Z",
    ]);
  });
});

describe("backfill through the gate", () => {
  it("re-runs a parent and a child over 5 days, the child never ahead of the parent", () => {
    const cron = "0 2 * * *";
    const now = new Date("2026-11-28T12:00:00Z");
    const from = new Date("2026-11-20T00:00:00Z");
    let parent: SchedulePosition = resetTo(cron, "UTC", from);
    let child: SchedulePosition = resetTo(cron, "UTC", from);
    const parentState = (): GateParentState => ({
      cron,
      timezone: "UTC",
      status: "active",
      prevIntervalStart: parent.prevIntervalStart,
    });
    const childView = (): GateChild => ({ cron, timezone: "UTC", logicalDate: child.logicalDate });

    // Right after the reset the parent has finished only the day before the range.
    expect(evaluateGate(childView(), [{ key: ordersRaw, state: parentState() }]).open).toBe(false);

    let childRuns = 0;
    for (let tick = 0; tick < 40 && (isDue(parent, now) || isDue(child, now)); tick++) {
      // A scheduler pass: the child first (it must be gated), then the parent.
      if (isDue(child, now) && evaluateGate(childView(), [{ key: ordersRaw, state: parentState() }]).open) {
        expect(parent.prevIntervalStart! >= child.logicalDate).toBe(true);
        child = advanceOnSuccess(child, cron, "UTC");
        childRuns++;
      }
      if (isDue(parent, now)) parent = advanceOnSuccess(parent, cron, "UTC");
    }
    expect(childRuns).toBe(8);
    expect(child.prevIntervalStart).toBe("2026-11-27T02:00:00.000Z");
    expect(parent.prevIntervalStart).toBe("2026-11-27T02:00:00.000Z");
  });
});
