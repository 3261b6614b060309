import { describe, expect, it } from "vitest";
import { type CheckpointPace, checkpointDue } from "../../src/snapshot/pace.js";

const busy: CheckpointPace = {
  position: 500n,
  savedPosition: 100n,
  positionAtTickBefore: 400n,
  msSinceLastSave: 10_000,
  lastSaveTookMs: 2_000,
};

describe("checkpointDue", () => {
  it("given nothing changed since the last checkpoint, then none is written", () => {
    expect(checkpointDue({ ...busy, savedPosition: 500n, positionAtTickBefore: 500n })).toBe(false);
    expect(checkpointDue({ ...busy, savedPosition: 500n, msSinceLastSave: 1e9 })).toBe(false);
  });

  it("given a busy scheduler and a slow checkpoint written lately, then the next waits", () => {
    // 10 s since one that took 2 s: it would take a fifth of the time, not a twentieth.
    expect(checkpointDue(busy)).toBe(false);
  });

  it("given a busy scheduler, when twenty times the last one's duration has passed, then one is written", () => {
    expect(checkpointDue({ ...busy, msSinceLastSave: 40_000 })).toBe(true);
    expect(checkpointDue({ ...busy, savedPosition: null, lastSaveTookMs: 0 })).toBe(true);
  });

  it("given the projection stopped moving since the tick before, then one is written at once", () => {
    expect(checkpointDue({ ...busy, positionAtTickBefore: 500n })).toBe(true);
  });
});
