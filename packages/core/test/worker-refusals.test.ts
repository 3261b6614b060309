import { decideRefusals, type RefusalWindow, settleRefusals } from "@chronolog/core";
import { describe, expect, it } from "vitest";

const budget = { perWindow: 3, windowMs: 60_000 };
const T0 = 1_000_000;

describe("decideRefusals: how many of a worker's refused reports the log keeps one by one", () => {
  it("given no refusal yet, when a few come, then each is recorded", () => {
    const d = decideRefusals(undefined, 2, "forged", T0, budget);
    expect(d).toEqual({
      record: 2,
      window: { since: T0, recorded: 2, counted: 0, countedSince: T0, reason: "" },
    });
  });

  it("given a window with room for one, when a batch of five comes, then one is recorded and four counted", () => {
    const first = decideRefusals(undefined, 2, "a", T0, budget).window;
    const d = decideRefusals(first, 5, "replayed", T0 + 10, budget);
    expect(d.record).toBe(1);
    expect(d.count).toBeUndefined();
    expect(d.window).toEqual({
      since: T0,
      recorded: 3,
      counted: 4,
      countedSince: T0 + 10,
      reason: "replayed",
    });
    // More past the budget: counted only, from the first counted one.
    const more = decideRefusals(d.window, 1000, "forged", T0 + 20, budget);
    expect(more.record).toBe(0);
    expect(more.window).toMatchObject({
      recorded: 3,
      counted: 1004,
      countedSince: T0 + 10,
      reason: "forged",
    });
  });

  it("given a window ended with refusals counted, when the next refusal comes, then the count is recorded first and a new window opens", () => {
    const full = decideRefusals(undefined, 10, "forged", T0, budget).window;
    const d = decideRefusals(full, 1, "replayed", T0 + 60_000, budget);
    expect(d.count).toEqual({ count: 7, since: T0, until: T0 + 60_000, reason: "forged" });
    expect(d.record).toBe(1);
    expect(d.window).toMatchObject({ since: T0 + 60_000, recorded: 1, counted: 0 });
  });

  it("given a window ended with nothing counted, when the next refusal comes, then no count is recorded", () => {
    const w = decideRefusals(undefined, 1, "forged", T0, budget).window;
    expect(decideRefusals(w, 1, "forged", T0 + 70_000, budget).count).toBeUndefined();
  });
});

describe("settleRefusals: the count recorded when a window ends or its worker goes", () => {
  const full: RefusalWindow = decideRefusals(undefined, 10, "forged", T0, budget).window;

  it("given a worker that goes mid-window, when settled, then its count is recorded and its window goes on without room", () => {
    const s = settleRefusals(full, T0 + 5, budget);
    expect(s.count).toEqual({ count: 7, since: T0, until: T0 + 5, reason: "forged" });
    expect(s.window).toMatchObject({ since: T0, recorded: 3, counted: 0 });
    // Reconnected, it gets no new budget: its next refusal is counted, not recorded.
    expect(decideRefusals(s.window, 1, "forged", T0 + 6, budget).record).toBe(0);
    // Nothing counted since: nothing more to record.
    expect(settleRefusals(s.window as RefusalWindow, T0 + 7, budget).count).toBeUndefined();
  });

  it("given a window ended, when settled, then its count is recorded and the worker forgotten", () => {
    expect(settleRefusals(full, T0 + 60_000, budget)).toEqual({
      count: { count: 7, since: T0, until: T0 + 60_000, reason: "forged" },
    });
    const quiet = decideRefusals(undefined, 1, "forged", T0, budget).window;
    expect(settleRefusals(quiet, T0 + 60_000, budget)).toEqual({});
  });
});
