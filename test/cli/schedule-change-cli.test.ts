import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";

/**
 * A task declared again with another schedule (cron, zone, start date) moves to the new
 * schedule's first interval at or after where it stood and its start date: it never runs an
 * interval the new schedule does not have.
 */
let dir: string;
beforeEach(() => {
  dir = tempDataDir("schedule-change");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const declare = (cron: string, startDate: string, extra = "") => {
  const file = join(dir, "t.yaml");
  writeFileSync(
    file,
    `tasks:\n  - { project: p, account: a, name: t, cron: "${cron}", startDate: "${startDate}", operator: { type: noop }${extra} }\n`,
  );
  return chronolog(dir, ["declare", file]);
};
const task = () => JSON.parse(chronolog(dir, ["task", "p/a/t", "--json"]).stdout).task;

describe("a task declared again with another schedule", () => {
  it("moves to the first interval of the new schedule at or after its start date, and says so", () => {
    expect(declare("0 * * * *", "2026-12-06T00:00:00Z").code).toBe(0);
    expect(task().logicalDate).toBe("2026-12-06T00:00:00.000Z");
    const r = declare("30 4 * * *", "2026-12-06T20:00:00Z");
    expect(r.code, r.stderr).toBe(0);
    expect(task()).toMatchObject({
      logicalDate: "2026-12-07T04:30:00.000Z",
      nextRunDate: "2026-12-08T04:30:00.000Z",
      prevIntervalStart: null,
    });
    const history = chronolog(dir, ["history", "p/a/t"]).stdout;
    expect(history).toContain(
      "set to 2026-12-07T04:30Z (its schedule changed: the first interval of the new one)",
    );
    // Only the cron changed, to one whose slots hold where it stands: it stays.
    expect(declare("30 4 * * *", "2026-12-06T20:00:00Z", ", retry: { maxAttempts: 2 }").code).toBe(0);
    expect(task().logicalDate).toBe("2026-12-07T04:30:00.000Z");
  });
});
