import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * Outside tasks from the CLI, beside a running `chronolog up` on a real SQLite log: an outside
 * task (`operator: { type: external }`) is never dispatched; `chronolog report` records its
 * intervals, in order or not, once or again; its child runs only once they are in. Refusals
 * write nothing, and a report killed mid-write leaves the log whole.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

const dir = tempDataDir("outside");
left.dirs.push(dir);
const now = Math.floor(Date.now() / HOUR) * HOUR;
/** Three hours that have ended, oldest first, and the one going on. */
const [h0, h1, h2, h3] = [-3, -2, -1, 0].map((n) => new Date(now + n * HOUR).toISOString()) as [
  string,
  string,
  string,
  string,
];
const PRICES = "vendor/acme/prices/ALL";
const USES = "vendor/acme/uses/ALL";
const said = (iso: string) => (iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : `${iso.slice(0, 16)}Z`);

let up: ChildProcess;

beforeAll(() => {
  const hourly = `cron: "0 * * * *", startDate: "${h0}", endDate: "${h2}"`;
  writeFileSync(
    join(dir, "tasks.yaml"),
    [
      "tasks:",
      `  - { project: vendor, account: acme, name: prices, ${hourly}, operator: { type: external } }`,
      `  - { project: vendor, account: acme, name: uses, ${hourly}, parents: [vendor/acme/prices], operator: { type: shell, command: "true" } }`,
      `  - { project: vendor, account: acme, name: gone, ${hourly}, operator: { type: external } }`,
      "",
    ].join("\n"),
  );
  const declared = chronolog(dir, ["declare", join(dir, "tasks.yaml")]);
  expect(declared.code, declared.stderr).toBe(0);
  expect(chronolog(dir, ["retire", "vendor/acme/gone"]).code).toBe(0);
  up = chronologSpawn(dir, ["up", "--http", "off", "--workers", "1", "--grace", "1"]);
  left.processes.push(up);
  up.stdout?.resume();
  up.stderr?.resume();
});

interface Why {
  condition: string;
  reasons: string[];
  nextSteps: Array<{ action: string; command: string }>;
}
const why = (id: string) => JSON.parse(chronolog(dir, ["why", id, "--json"]).stdout) as Why;
const shown = (id: string) =>
  JSON.parse(chronolog(dir, ["task", id, "--json"]).stdout) as {
    task: { logicalDate: string; prevIntervalStart: string | null };
    reports?: Array<{ logicalDate: string; outcome: string; by: string; standing: string }>;
  };
const lines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
const events = (id: string) =>
  lines(chronolog(dir, ["history", id, "--json"]).stdout) as Array<{
    type: string;
    data: { logicalDate?: string; outcome?: string; by?: string };
  }>;
/** How many events the command line has written (the scheduler writes its own meanwhile). */
const head = () =>
  (
    lines(chronolog(dir, ["log", "read", "--json", "-n", "100000"]).stdout) as Array<{
      metadata: { actor?: string };
    }>
  ).filter((e) => e.metadata.actor?.startsWith("cli:")).length;
const report = (...args: string[]) => chronolog(dir, ["report", PRICES, ...args]);

describe("chronolog report", () => {
  it("the child waits for an outside report; refusals write nothing", async () => {
    await waitUntil("the child to wait for the report", () =>
      why(USES).condition === "blocked" ? true : undefined,
    );
    expect(why(USES).reasons).toEqual([`waits for an outside report of ${PRICES} ${said(h0)}`]);
    expect(why(PRICES).nextSteps.map((s) => s.command)).toEqual([
      `chronolog report ${PRICES} --interval ${h0}`,
      `chronolog report ${PRICES} --interval ${h0} --failed "say why"`,
    ]);
    const before = head();
    const refused: Array<[string[], number, RegExp]> = [
      [["report", PRICES, "--interval", h3], 8, /has not ended yet/],
      [["report", PRICES, "--interval", h0, "--failed", " "], 2, /say why/],
      [
        ["report", PRICES, "--interval", "2000-01-01T00:30:00Z"],
        2,
        /before the task's start date .*; its first interval is /,
      ],
      [["report", "vendor/acme/nope", "--interval", h0], 4, /no task vendor\/acme\/nope\/ALL/],
      [["report", USES, "--interval", h0], 8, /is not an outside task \(its operator is shell\)/],
      [["report", "vendor/acme/gone", "--interval", h0], 8, /is retired/],
    ];
    for (const [args, code, message] of refused) {
      const r = chronolog(dir, args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(code);
      expect(r.stderr).toMatch(message);
    }
    expect(head()).toBe(before);
  }, 180_000);

  it("out of order: held until the earlier interval is in; repeated: nothing written", async () => {
    const held = report("--interval", h1, "--reason", "file 2 of 3");
    expect(held.code, held.stderr).toBe(0);
    expect(held.stdout).toContain(`reported ${PRICES} ${h1} succeeded; held: it counts once ${PRICES} ${h0}`);
    const reasons = why(PRICES).reasons.join("\n");
    expect(reasons).toContain("held until it is in (its intervals complete in order)");
    expect(reasons).toMatch(new RegExp(`${said(h1)} reported succeeded by cli:`));
    expect(shown(PRICES).reports).toEqual([
      expect.objectContaining({ logicalDate: h1, outcome: "succeeded", standing: "held" }),
    ]);

    const before = head();
    const again = report("--interval", h1);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/was already reported succeeded by cli:.*: nothing written/);
    expect(head()).toBe(before);
    // The child has not moved: the earlier interval is not in.
    expect(shown(USES).task.prevIntervalStart).toBeNull();

    const first = report("--interval", h0);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("it counts as done for its children");
    await waitUntil(
      "the child to run both intervals",
      () => (shown(USES).task.prevIntervalStart === h1 ? true : undefined),
      60_000,
    );
    expect(shown(PRICES).task.logicalDate).toBe(h2);
    expect(why(USES).reasons).toEqual([`waits for an outside report of ${PRICES} ${said(h2)}`]);
    // Never dispatched.
    expect(events(PRICES).some((e) => e.type === "DispatchIntended")).toBe(false);
  }, 180_000);

  it("a failure stops it; succeeded then failed is refused; failed then succeeded lets the child run", async () => {
    const failed = report("--interval", h2, "--failed", "no file in the drop");
    expect(failed.code, failed.stderr).toBe(0);
    await waitUntil("the outside task to stop at the failure", () =>
      why(PRICES).condition === "failed" ? true : undefined,
    );
    expect(why(PRICES).reasons.join("\n")).toContain("reported failed by cli:");
    expect(why(PRICES).reasons.join("\n")).toContain("no file in the drop");
    expect(why(USES).reasons[0]).toContain(`its outside report of ${said(h2)} says failed`);
    expect(chronolog(dir, ["retry", PRICES, "--interval", h2]).stderr).toContain("nothing to retry");

    const before = head();
    const conflicting = report("--interval", h0, "--failed", "wrong file");
    expect(conflicting.code).toBe(8);
    expect(conflicting.stderr).toMatch(/was reported succeeded by cli:.*: a report of failed is refused/);
    expect(head()).toBe(before);

    const late = report("--interval", h2, "--reason", "the late file");
    expect(late.code, late.stderr).toBe(0);
    expect(late.stdout).toMatch(/\(was reported failed by cli:/);
    await waitUntil(
      "the child to run the last interval",
      () => (shown(USES).task.prevIntervalStart === h2 ? true : undefined),
      60_000,
    );
    const reports = events(PRICES).filter((e) => e.type === "IntervalReported");
    expect(reports.map((e) => [e.data.logicalDate, e.data.outcome])).toEqual([
      [h1, "succeeded"],
      [h0, "succeeded"],
      [h2, "failed"],
      [h2, "succeeded"],
    ]);
    expect(reports.every((e) => e.data.by?.startsWith("cli:"))).toBe(true);
  }, 180_000);
});

describe("a report killed mid-write", () => {
  it("leaves the log whole: each try is in whole or not at all, and the report is made again", async () => {
    // A second outside task, so the first one's history stays as it is.
    writeFileSync(
      join(dir, "more.yaml"),
      `tasks:\n  - { project: vendor, account: acme, name: rates, cron: "0 * * * *", startDate: "${h0}", endDate: "${new Date(Date.parse(h0) + HOUR / 2).toISOString()}", operator: { type: external } }\n`,
    );
    expect(chronolog(dir, ["declare", join(dir, "more.yaml")]).code).toBe(0);
    const RATES = "vendor/acme/rates/ALL";
    // How long a report takes here, to the refusal that reads and decides as a report does: the
    // kills land from the middle of its run to past its end, around the append.
    const started = Date.now();
    expect(chronolog(dir, ["report", RATES, "--interval", h3]).code).toBe(8);
    const took = Date.now() - started;
    for (const delay of [0.5, 0.7, 0.8, 0.9, 1, 1.1].map((f) => Math.round(f * took))) {
      const child = chronologSpawn(dir, ["report", RATES, "--interval", h0]);
      left.processes.push(child);
      child.stdout?.resume();
      child.stderr?.resume();
      const exited = new Promise((resolve) => child.once("exit", resolve));
      await new Promise((resolve) => setTimeout(resolve, delay));
      child.kill("SIGKILL");
      await exited;
      const written = events(RATES).filter((e) => e.type === "IntervalReported");
      expect(written.length).toBeLessThanOrEqual(1);
    }
    const verified = chronolog(dir, ["log", "verify"]);
    expect(verified.code, verified.stderr).toBe(0);
    const last = chronolog(dir, ["report", RATES, "--interval", h0]);
    expect(last.code, last.stderr).toBe(0);
    expect(events(RATES).filter((e) => e.type === "IntervalReported")).toHaveLength(1);
  }, 180_000);
});
