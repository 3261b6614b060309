import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

/**
 * Dates as people type them: a day without a time names the intervals whose logical date falls
 * on that day in the task's zone, for --from, --to and --interval alike; with a time, the
 * instant, as before. One schedule of each shape: hourly, daily at 03:30 in Berlin, weekly.
 */
const left = new Leftovers();
afterAll(() => left.clear());

const HOURLY = "p/a/hourly/ALL";
const DAILY = "p/a/daily/ALL";
const WEEKLY = "p/a/weekly/ALL";

describe("dates as people type them", () => {
  it("a day is the task's day: whole for --from and --to, one interval for --interval; nothing written", () => {
    const dir = tempDataDir("dates");
    left.dirs.push(dir);
    const file = join(dir, "t.yaml");
    const task = (name: string, cron: string, zone: string) =>
      `  - { project: p, account: a, name: ${name}, cron: "${cron}", timezone: ${zone}, startDate: "2026-11-01T00:00:00Z", catchup: false, operator: { type: noop } }`;
    writeFileSync(
      file,
      `tasks:\n${[
        task("hourly", "0 * * * *", "UTC"),
        task("daily", "30 3 * * *", "Europe/Berlin"),
        task("weekly", "0 6 * * 1", "UTC"),
      ].join("\n")}\n`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const log = () => chronolog(dir, ["log", "read", "--json", "-n", "1000000"]).stdout;
    const before = log();

    const plan = (id: string, from: string, to: string) => {
      const r = chronolog(dir, ["backfill", id, "--from", from, "--to", to, "--dry-run"]);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    // Hourly: --to 2026-12-02 includes the 24 hours of the 2nd (it meant 49 intervals, to 00:00).
    expect(plan("p/a/hourly", "2026-11-30", "2026-12-02")).toContain(
      `reset ${HOURLY}: 72 intervals 2026-11-30T00:00Z .. 2026-12-02T23:00Z`,
    );
    // With a time, the instant, as before.
    expect(plan("p/a/hourly", "2026-11-30", "2026-12-02T00:00Z")).toContain(
      `reset ${HOURLY}: 49 intervals 2026-11-30T00:00Z .. 2026-12-02T00:00Z`,
    );
    // Daily at 03:30 in Berlin (02:30 UTC in winter): one a day, the 2nd's included.
    expect(plan("p/a/daily", "2026-11-30", "2026-12-02")).toContain(
      `reset ${DAILY}: 3 intervals 2026-11-30T02:30Z .. 2026-12-02T02:30Z`,
    );
    // Weekly on Mondays: the 30th is one; the 1st and 2nd hold none.
    expect(plan("p/a/weekly", "2026-11-30", "2026-12-02")).toContain(
      `reset ${WEEKLY}: 1 interval 2026-11-30T06:00Z .. 2026-11-30T06:00Z`,
    );
    const none = chronolog(dir, [
      "backfill",
      "p/a/weekly",
      "--from",
      "2026-12-01",
      "--to",
      "2026-12-02",
      "--dry-run",
    ]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain(`skipped ${WEEKLY}: no interval of its schedule falls in the range`);

    // --interval: the daily task's interval of the 1st is its 03:30 in Berlin, not midnight UTC.
    const logs = chronolog(dir, ["logs", "p/a/daily", "--interval", "2026-12-01"]);
    expect(logs.code).toBe(4);
    expect(logs.stderr).toContain(`${DAILY} has no attempt for the interval 2026-12-01T02:30Z`);
    const abandon = chronolog(dir, ["attempt", "abandon", "p/a/daily", "--interval", "2026-12-01"]);
    expect(abandon.code).toBe(4);
    expect(abandon.stderr).toContain(`${DAILY} has no attempt for 2026-12-01T02:30:00.000Z`);
    // A day that holds several intervals, or none, is refused, saying which there are.
    const hourly = chronolog(dir, ["logs", "p/a/hourly", "--interval", "2026-12-01"]);
    expect(hourly.code).toBe(2);
    expect(hourly.stderr).toContain(
      "2026-12-01 holds 24 intervals of p/a/hourly/ALL (0 * * * * (UTC)), 2026-12-01T00:00Z .. 2026-12-01T23:00Z: name one with its time",
    );
    const weekly = chronolog(dir, ["attempt", "abandon", "p/a/weekly", "--interval", "2026-12-01"]);
    expect(weekly.code).toBe(2);
    expect(weekly.stderr).toContain(
      "no interval of p/a/weekly/ALL starts on 2026-12-01 in its zone (0 6 * * 1 (UTC)); the next starts 2026-12-07T06:00Z",
    );
    // A range reaching past where a task stands (its next interval, the weekly one's 2026-11-30
    // here: declared with catchup off, nothing run yet) stops there; one wholly after it is
    // refused: the schedule runs those intervals on its own, and moving the task past them
    // would leave them never run.
    expect(plan("p/a/weekly", "2026-11-23", "2026-12-14")).toContain(
      `reset ${WEEKLY}: 2 intervals 2026-11-23T06:00Z .. 2026-11-30T06:00Z`,
    );
    expect(plan("p/a/weekly", "2026-11-23", "2026-12-14")).toContain(
      "until its next interval 2026-11-30T06:00Z: those after it, its schedule runs on its own (not reset)",
    );
    const ahead = chronolog(dir, ["backfill", "p/a/weekly", "--from", "2026-12-01", "--to", "2026-12-14"]);
    expect(ahead.code, ahead.stdout).toBe(2);
    expect(ahead.stderr).toContain(
      `--from: 2026-12-01 is after ${WEEKLY}'s next interval 2026-11-30T06:00Z: a backfill runs again the intervals up to where the task stands`,
    );
    // --from a day that holds the task's first interval starts there (not at a midnight before
    // its startDate, refused as such).
    const late = join(dir, "late.yaml");
    writeFileSync(
      late,
      `tasks:\n  - { project: p, account: a, name: late, cron: "0 * * * *", startDate: "2026-11-20T10:00:00Z", catchup: false, operator: { type: noop } }\n`,
    );
    expect(chronolog(dir, ["declare", late]).code).toBe(0);
    expect(plan("p/a/late", "2026-11-20", "2026-11-20")).toContain(
      "reset p/a/late/ALL: 14 intervals 2026-11-20T10:00Z .. 2026-11-20T23:00Z",
    );
    const before2 = log();
    const bad = chronolog(dir, ["backfill", "p/a/daily", "--from", "2026-11-31", "--to", "2026-12-02"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"2026-11-31" is not a day of the calendar');
    expect(log()).toBe(before2);
    // Nothing but the one declaration was written by all of the above.
    expect(before2.startsWith(before)).toBe(true);
  }, 120_000);
});
