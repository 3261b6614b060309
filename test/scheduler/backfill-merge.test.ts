import type { ChildProcess } from "node:child_process";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  chronolog,
  chronologAsync,
  chronologSpawn,
  Leftovers,
  tempDataDir,
} from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * Two backfills (or a backfill and a rerun) of one task, asked for before a scheduler runs them,
 * never run again what no range named: ranges that overlap or touch what the pending backfill
 * has left are merged into it, keeping the position the task returns to; a range apart from it
 * is refused (exit 8) with the pending backfill, its range and how far it has come, and nothing
 * is written. An hourly workflow of two tasks that are not idempotent (`work`, and `report`
 * below it) first finishes 00:00-05:00 of a past day; every run appends its task and interval
 * to an effects file, which counts how often each interval ran. That first day runs once, in a
 * data directory each test starts from a copy of (the effects file in it, named to the tasks by
 * the scheduler's environment, is copied with it).
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const day0 = Math.floor(Date.now() / DAY) * DAY - 2 * DAY;
const at = (h: number) => new Date(day0 + h * HOUR).toISOString();
const WORK = "p/a/work/ALL";
const REPORT = "p/a/report/ALL";
const left = new Leftovers();
afterAll(() => left.clear());

function up(dir: string): ChildProcess {
  const p = chronologSpawn(dir, ["up", "--workers", "2", "--reconcile-ms", "200", "--pass-env", "EFFECTS"], {
    EFFECTS: join(dir, "effects"),
  });
  left.processes.push(p);
  // Its service log is not read here, but must not fill the pipes and stall it.
  p.stderr?.resume();
  p.stdout?.resume();
  return p;
}

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  p.kill("SIGTERM");
  await new Promise((r) => p.once("exit", r));
}

function tasks(dir: string): Array<{ task: string; logicalDate: string; prevIntervalStart: string | null }> {
  const r = chronolog(dir, ["tasks", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** Every task done through 05:00 and standing at 06:00, past the schedule's end. */
function atOriginalPosition(dir: string): boolean {
  const all = tasks(dir);
  return all.length === 2 && all.every((t) => t.logicalDate === at(6) && t.prevIntervalStart === at(5));
}

/** How often each task ran each hour: `work 00:00` -> 1, ... */
function ran(dir: string): Record<string, number> {
  const file = join(dir, "effects");
  const counts: Record<string, number> = {};
  if (!existsSync(file)) return counts;
  for (const line of readFileSync(file, "utf8").trim().split("\n")) {
    const [task, ts] = line.split(" ");
    const hour = (Date.parse(ts as string) - day0) / HOUR;
    const name = `${task} ${String(hour).padStart(2, "0")}:00`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

/** The counts expected: once for 00:00-05:00, plus once more for each hour of `again`. */
function expected(again: Record<string, number[]>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const task of ["work", "report"])
    for (let h = 0; h <= 5; h++)
      counts[`${task} ${String(h).padStart(2, "0")}:00`] = 1 + (again[task]?.includes(h) ? 1 : 0);
  return counts;
}

/** Events in the whole log: a refusal must leave it as it was. */
function written(dir: string): number {
  const r = chronolog(dir, ["log", "read", "--json", "--limit", "1000000"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim().split("\n").length;
}

/** A data directory where the workflow has finished 00:00-05:00, and no scheduler runs. */
async function firstDay(): Promise<string> {
  const dir = tempDataDir("bf-first-day");
  left.dirs.push(dir);
  const file = join(dir, "w.yaml");
  writeFileSync(
    file,
    `workflows:
  - name: hourly
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${at(0)}"
    endDate: "${new Date(day0 + 5.5 * HOUR).toISOString()}"
    tasks:
      - { name: work, operator: { type: shell, command: 'echo work {{ ts }} >> "$EFFECTS"' } }
      - { name: report, parents: [work], operator: { type: shell, command: 'echo report {{ ts }} >> "$EFFECTS"' } }
`,
  );
  const d = chronolog(dir, ["declare", file]);
  expect(d.code, d.stderr).toBe(0);
  const p = up(dir);
  await waitUntil("00:00-05:00 to finish", () => (atOriginalPosition(dir) ? true : undefined));
  await stop(p);
  expect(ran(dir)).toEqual(expected({}));
  return dir;
}

let template = "";
beforeAll(async () => {
  template = await firstDay();
}, 120_000);

/** A copy of the data directory where the first day has finished, for one test. */
function finishedFirstDay(label: string): string {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  cpSync(template, dir, { recursive: true });
  expect(atOriginalPosition(dir)).toBe(true);
  expect(ran(dir)).toEqual(expected({}));
  return dir;
}

/**
 * Runs the scheduler until every task is back at 06:00 with nothing left to do, then stops it.
 * The effects file is watched first (a read of a file, where each look through the CLI takes a
 * process's start): the CLI is asked only once the runs `want` counts have been written.
 */
async function schedulerRuns(dir: string, want: Record<string, number>): Promise<void> {
  const p = up(dir);
  const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, n) => a + n, 0);
  await waitUntil(
    "the backfills' runs",
    () => (total(ran(dir)) >= total(want) ? true : undefined),
    60_000,
    50,
  );
  await waitUntil("the backfills to finish", () => {
    if (!atOriginalPosition(dir)) return undefined;
    const shown = [WORK, REPORT].map((t) => chronolog(dir, ["show", t]).stdout);
    return shown.every((s) => !s.includes("backfill ")) ? true : undefined;
  });
  // Anything that would still run beyond the ranges would show up here.
  await new Promise((r) => setTimeout(r, 1500));
  await stop(p);
}

function backfill(dir: string, task: string, from: number, to: number, ...more: string[]): CliResult {
  return chronolog(dir, ["backfill", task, "--from", at(from), "--to", at(to), "--detach", ...more]);
}

function idOf(r: CliResult): string {
  const id = /^backfill (\S+)$/m.exec(r.stdout)?.[1];
  expect(id, r.stdout).toBeDefined();
  return id as string;
}

/** `chronolog backfill` as a process of its own, started at once; resolves when it exits. */
function backfillProcess(dir: string, from: number, to: number): Promise<CliResult> {
  return chronologAsync(dir, ["backfill", WORK, "--from", at(from), "--to", at(to), "--detach"]);
}

describe("two backfills of one task queued before a scheduler runs", () => {
  it("overlapping ranges merge: each hour named runs once more, 03:00-05:00 never again", async () => {
    const dir = finishedFirstDay("bf-overlap");
    const first = backfill(dir, WORK, 1, 2);
    expect(first.code, first.stderr).toBe(0);
    const second = backfill(dir, WORK, 2, 3);
    expect(second.code, second.stderr).toBe(0);
    const want = expected({ work: [1, 2, 3] });
    await schedulerRuns(dir, want);
    expect(ran(dir)).toEqual(want);
    expect(second.stdout).toContain(`joined backfill ${idOf(first)} over ${at(1)} .. ${at(2)}`);
    expect(idOf(second)).toBe(idOf(first));
  }, 120_000);

  it("adjacent ranges merge: 00:00, 01:00 and 02:00 run once more each, nothing after them", async () => {
    const dir = finishedFirstDay("bf-adjacent");
    const first = backfill(dir, WORK, 1, 1);
    expect(first.code, first.stderr).toBe(0);
    // The later range first, then one that ends just before it: both orders join.
    const second = backfill(dir, WORK, 2, 2);
    expect(second.code, second.stderr).toBe(0);
    const third = backfill(dir, WORK, 0, 0);
    expect(third.code, third.stderr).toBe(0);
    const want = expected({ work: [0, 1, 2] });
    await schedulerRuns(dir, want);
    expect(ran(dir)).toEqual(want);
    expect(third.stdout).toContain(`joined backfill ${idOf(first)} over ${at(1)} .. ${at(2)}`);
  }, 120_000);

  it("a range apart from the pending one is refused (exit 8) naming it, and writes nothing", async () => {
    const dir = finishedFirstDay("bf-disjoint");
    const first = backfill(dir, WORK, 1, 1);
    expect(first.code, first.stderr).toBe(0);
    const before = written(dir);
    const second = backfill(dir, WORK, 3, 4);
    expect(second.code, second.stdout).toBe(8);
    expect(second.stderr).toContain(
      `backfill ${idOf(first)} over ${at(1)} .. ${at(1)} is pending on ${WORK}: 0 of 1 interval done, next ${at(1)}`,
    );
    expect(second.stderr).toContain(`${at(3)} .. ${at(4)} neither overlaps nor touches`);
    expect(written(dir)).toBe(before);
    const want = expected({ work: [1] });
    await schedulerRuns(dir, want);
    expect(ran(dir)).toEqual(want);
  }, 120_000);

  it("with --downstream every target merges, or the whole backfill is refused", async () => {
    const dir = finishedFirstDay("bf-downstream");
    // Only the child has a backfill pending, at 01:00.
    const child = backfill(dir, REPORT, 1, 1);
    expect(child.code, child.stderr).toBe(0);
    const before = written(dir);
    // 03:00-04:00 would be fine for `work`, but not for `report`: nothing is written for either.
    const apart = backfill(dir, WORK, 3, 4, "--downstream");
    expect(apart.code, apart.stdout).toBe(8);
    expect(apart.stderr).toContain(
      `backfill ${idOf(child)} over ${at(1)} .. ${at(1)} is pending on ${REPORT}`,
    );
    expect(written(dir)).toBe(before);
    // 02:00-03:00 touches what the child has left: `work` is set back, `report` joins its backfill.
    const joined = backfill(dir, WORK, 2, 3, "--downstream");
    expect(joined.code, joined.stderr).toBe(0);
    expect(joined.stdout).toContain(`joined backfill ${idOf(child)} over ${at(1)} .. ${at(1)}`);
    const want = expected({ work: [2, 3], report: [1, 2, 3] });
    await schedulerRuns(dir, want);
    expect(ran(dir)).toEqual(want);
  }, 120_000);
});

describe("two backfills racing from two processes", () => {
  it("overlapping ranges end merged: both succeed, and the task returns to 06:00", async () => {
    const dir = finishedFirstDay("bf-race-merge");
    const [a, b] = await Promise.all([backfillProcess(dir, 1, 2), backfillProcess(dir, 2, 3)]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const want = expected({ work: [1, 2, 3] });
    await schedulerRuns(dir, want);
    expect(ran(dir)).toEqual(want);
    // One of them was written first; the other joined it.
    expect(`${a.stdout}${b.stdout}`).toContain("joined backfill ");
  }, 120_000);

  it("ranges apart end with one refused (exit 8), the other run alone", async () => {
    const dir = finishedFirstDay("bf-race-refuse");
    const [a, b] = await Promise.all([backfillProcess(dir, 1, 1), backfillProcess(dir, 3, 4)]);
    expect([a.code, b.code].sort(), `${a.stderr}\n${b.stderr}`).toEqual([0, 8]);
    const refused = a.code === 8 ? a : b;
    expect(refused.stderr).toContain("neither overlaps nor touches");
    const want = expected({ work: a.code === 0 ? [1] : [3, 4] });
    await schedulerRuns(dir, want);
    expect(ran(dir)).toEqual(want);
  }, 120_000);
});

describe("a rerun or trigger landing on a task with a backfill pending", () => {
  it("a date apart from it is refused; a date touching it joins it and keeps its resume point", async () => {
    const dir = finishedFirstDay("bf-rerun");
    const first = backfill(dir, WORK, 1, 2);
    expect(first.code, first.stderr).toBe(0);
    const before = written(dir);
    const apart = chronolog(dir, ["trigger", "hourly", "--logical-date", at(4)]);
    expect(apart.code, apart.stdout).toBe(8);
    expect(apart.stderr).toContain(
      `backfill ${idOf(first)} over ${at(1)} .. ${at(2)} is pending on ${WORK}: 0 of 2 intervals done`,
    );
    expect(written(dir)).toBe(before);
    const touching = chronolog(dir, ["rerun", `hourly@${at(3)}`]);
    expect(touching.code, touching.stderr).toBe(0);
    const want = expected({ work: [1, 2, 3], report: [3] });
    await schedulerRuns(dir, want);
    // `work` walks 01:00-03:00 once and returns; `report`, not backfilled, reruns 03:00 alone.
    expect(ran(dir)).toEqual(want);
  }, 120_000);
});
