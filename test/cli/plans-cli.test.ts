import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * Operations say what they will do before and after doing it: `backfill`, `rerun` and `trigger`
 * take --dry-run and print every task and interval they reset or start (and the pending backfill
 * they join), and print the same list once done; a dry run writes nothing. `backfill
 * --downstream` holds each descendant to its own start date; `trigger` starts exactly the run it
 * names, or is refused naming what stands in the way.
 *
 * The operator's finance workflow: an hourly ingest task and a daily 03:30 workflow of three
 * tasks declared to start a day later; `revenue` reads the ingest task.
 */
const DAY = 86_400_000;
const left = new Leftovers();
afterAll(() => left.clear());

/**
 * The UTC day `n` days after five days ago: days well over, whatever the time now. (From four
 * days ago, day(2) was two days ago, whose 03:30 interval is the daily workflow's latest due one
 * until 03:30 today: between midnight and then, its tasks declared without catch-up ran in
 * day(2)'s run too.)
 */
const day = (n: number) =>
  new Date(Math.floor(Date.now() / DAY) * DAY - (5 - n) * DAY).toISOString().slice(0, 10);
const at330 = (n: number) => `${day(n)}T03:30Z`;
const INGEST = "ingest/acme/orders_raw/ALL";
const REVENUE = "finance/acme/revenue/ALL";
const COSTS = "finance/acme/costs/ALL";
const REPORT = "finance/acme/report/ALL";

function declared(label: string): string {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  const file = join(dir, "finance.yaml");
  writeFileSync(
    file,
    `tasks:
  - { project: ingest, account: acme, name: orders_raw, cron: "0 * * * *", startDate: "${day(0)}T00:00:00Z", catchup: false, idempotent: true, operator: { type: noop } }
workflows:
  - name: finance_daily
    project: finance
    account: acme
    cron: "30 3 * * *"
    startDate: "${day(1)}T00:00:00Z"
    catchup: false
    params: { mode: full }
    tasks:
      - { name: revenue, parents: ["ingest/acme/orders_raw"], idempotent: true, operator: { type: shell, command: "echo revenue for {{ ds }} in {{ params.mode }} mode" } }
      - { name: costs, idempotent: true, operator: { type: noop } }
      - { name: report, parents: [revenue, costs], idempotent: true, operator: { type: noop } }
`,
  );
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
  return dir;
}

/** The whole log, as `log read` prints it: what a dry run or a refusal must leave as it was. */
const logOf = (dir: string) => {
  const r = chronolog(dir, ["log", "read", "--json", "-n", "1000000"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
};

interface Task {
  logicalDate: string;
  backfill: { from: string; until: string } | null;
}
const task = (dir: string, id: string): Task =>
  JSON.parse(chronolog(dir, ["task", id, "--json"]).stdout).task;

interface RunRow {
  runId: string;
  status: string;
  tasks: string[];
}
const runs = (dir: string): RunRow[] => JSON.parse(chronolog(dir, ["runs", "--json"]).stdout);

function up(dir: string): ChildProcess {
  const p = chronologSpawn(dir, ["up", "--workers", "2", "--reconcile-ms", "200", "--http", "off"]);
  left.processes.push(p);
  p.stderr?.resume();
  p.stdout?.resume();
  return p;
}

describe("operations say what they will do", () => {
  it("backfill --downstream keeps each descendant to its startDate, says so, dry or not, and starts no run before it", async () => {
    const dir = declared("plans-backfill");
    const args = ["backfill", "ingest/acme/orders_raw", "--from", day(0), "--to", day(2), "--downstream"];

    const before = logOf(dir);
    const dry = chronolog(dir, [...args, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(logOf(dir)).toBe(before);
    const lines = dry.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("dry run, nothing written: without --dry-run the backfill would");
    // The days are whole: --to includes the 24 hours of its day, and the one 03:30 of each.
    expect(lines).toContain(`reset ${INGEST}: 72 intervals ${day(0)}T00:00Z .. ${day(2)}T23:00Z`);
    expect(lines).toContain(`reset ${REVENUE}: 2 intervals ${at330(1)} .. ${at330(2)}`);
    expect(lines).toContain(`reset ${REPORT}: 2 intervals ${at330(1)} .. ${at330(2)}`);
    expect(lines).toContain(
      `  from its startDate ${day(1)}T00:00Z: 1 interval from ${at330(0)} before it not reset (--force resets them too)`,
    );
    expect(dry.stdout).not.toContain(`${REVENUE}: 3 intervals`);
    expect(dry.stdout).not.toContain(COSTS);

    // Carried out, it prints the same list (and the backfill's id).
    const real = chronolog(dir, [...args, "--detach"]);
    expect(real.code, real.stderr).toBe(0);
    const done = real.stdout.trimEnd().split("\n");
    expect(done.filter((l) => !l.startsWith("backfill "))).toEqual(lines.slice(1));
    expect(done.at(-1)).toMatch(/^backfill [0-9a-f-]{36}$/);
    expect(task(dir, REVENUE)).toMatchObject({
      logicalDate: `${day(1)}T03:30:00.000Z`,
      backfill: { from: `${day(1)}T03:30:00.000Z`, until: `${day(2)}T03:30:00.000Z` },
    });
    // The same backfill of the child alone is refused, as it was: same rule, same word.
    const child = chronolog(dir, ["backfill", "finance/acme/revenue", "--from", day(0), "--to", day(2)]);
    expect(child.code).toBe(2);
    expect(child.stderr).toContain(`is before ${REVENUE}'s startDate`);

    // Run: each date a task was set back to is one run of the tasks that run it, and it
    // finishes; no run is made for the day before the workflow's start.
    const p = up(dir);
    const finished = await waitUntil("the backfill's runs to finish", () => {
      const rs = runs(dir).filter((r) => r.runId.includes(day(1)) || r.runId.includes(day(2)));
      return rs.length === 2 && rs.every((r) => r.status === "success") ? rs : undefined;
    });
    expect(finished.map((r) => r.tasks.sort())).toEqual([
      [REPORT, REVENUE],
      [REPORT, REVENUE],
    ]);
    expect(runs(dir).some((r) => r.runId.includes(day(0)))).toBe(false);
    await waitUntil("the backfill's windows to close", () =>
      task(dir, REVENUE).backfill === null && task(dir, INGEST).backfill === null ? true : undefined,
    );

    // A date typed as a day names the daily task's 03:30 interval of that day.
    const logs = chronolog(dir, ["logs", "finance/acme/revenue", "--interval", day(1)]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain(`revenue for ${day(1)} in full mode`);

    // A rerun's dry run: the run's tasks and interval, and nothing written.
    p.kill("SIGTERM");
    await new Promise((r) => p.once("exit", r));
    const quiet = logOf(dir);
    // (A run id takes a day too: the workflow's interval that starts on it.)
    const rerun = chronolog(dir, ["rerun", `finance_daily@${day(1)}`, "--dry-run"]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toContain(
      `dry run, nothing written: would rerun finance_daily@${day(1)}T03:30:00.000Z (try 2) with 2 tasks:`,
    );
    expect(rerun.stdout).toMatch(new RegExp(`\\n  ${REVENUE} +${at330(1)}\\n`));
    expect(logOf(dir)).toBe(quiet);
    const again = chronolog(dir, ["rerun", `finance_daily@${at330(1)}`]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.replace(/^.*\n/, "")).toBe(rerun.stdout.replace(/^.*\n/, ""));
    expect(again.stdout).toMatch(/^rerunning finance_daily@\S+ \(try 2\) with 2 tasks:\n/);
    // Its tasks walk the rerun's window: `task` says so, and a backfill's cancel does not take it.
    expect(chronolog(dir, ["task", REVENUE]).stdout).toContain(
      `\nrerun       ${at330(1)} (a rerun's or a trigger's window)\n`,
    );
    const cancel = chronolog(dir, ["backfill", REVENUE, "--cancel"]);
    expect(cancel.code).toBe(8);
    expect(cancel.stderr).toContain(`${REVENUE} walks a rerun's or a trigger's window, not a backfill`);
  }, 180_000);

  it("trigger starts exactly the run it names, or is refused naming what stands in the way, writing nothing", () => {
    const dir = declared("plans-trigger");
    // A backfill of costs over two days is pending (no scheduler runs here).
    const pending = chronolog(dir, [
      "backfill",
      "finance/acme/costs",
      "--from",
      day(1),
      "--to",
      day(2),
      "--detach",
    ]);
    expect(pending.code, pending.stderr).toBe(0);
    const id = /backfill ([0-9a-f-]{36})/.exec(pending.stdout)?.[1];

    const before = logOf(dir);
    for (const extra of [[], ["--dry-run"]]) {
      const t = chronolog(dir, [
        "trigger",
        "finance_daily",
        "--logical-date",
        `${day(2)}T03:30Z`,
        "--param",
        "mode=quick",
        ...extra,
      ]);
      expect(t.code).toBe(8);
      expect(t.stderr).toContain(
        `trigger of finance_daily@${day(2)}T03:30:00.000Z refused: backfill ${id} over ${day(1)}T03:30:00.000Z .. ${day(2)}T03:30:00.000Z is pending on ${COSTS}: 0 of 2 intervals done`,
      );
      expect(t.stderr).toContain("a trigger starts only the run it names");
      expect(logOf(dir)).toBe(before);
    }
    expect(task(dir, COSTS).logicalDate).toBe(`${day(1)}T03:30:00.000Z`);

    // Another data dir, nothing pending: a paused task stands in the way, then nothing does.
    const clean = declared("plans-trigger-clean");
    expect(chronolog(clean, ["pause", "finance/acme/report"]).code).toBe(0);
    const paused = logOf(clean);
    const refused = chronolog(clean, ["trigger", "finance_daily", "--logical-date", day(2)]);
    expect(refused.code).toBe(8);
    expect(refused.stderr).toContain(`${REPORT} is paused and the run would wait for it: resume first`);
    expect(logOf(clean)).toBe(paused);
    expect(chronolog(clean, ["resume", "finance/acme/report"]).code).toBe(0);

    const args = ["trigger", "finance_daily", "--logical-date", day(2), "--param", "mode=quick"];
    const resumed = logOf(clean);
    const dry = chronolog(clean, [...args, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(logOf(clean)).toBe(resumed);
    const head = `would start run finance_daily@${day(2)}T03:30:00.000Z (try 1) with 3 tasks:`;
    expect(dry.stdout.split("\n")[0]).toBe(`dry run, nothing written: ${head}`);
    for (const t of [REVENUE, COSTS, REPORT])
      expect(dry.stdout).toMatch(new RegExp(`\\n  ${t} +${at330(2)}\\n`));
    expect(dry.stdout).toContain("params mode=quick");

    const t = chronolog(clean, args);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout.split("\n")[0]).toBe(head.replace("would start", "started"));
    expect(t.stdout.replace(/^.*\n/, "")).toBe(dry.stdout.replace(/^.*\n/, ""));
    // What it wrote: the run's start and the three tasks set back to that one date, no other.
    const written = chronolog(clean, ["log", "read", "--json", "-n", "1000000"])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; data: { logicalDate?: string } })
      .slice(resumed.trim().split("\n").length);
    expect(written.map((e) => e.type).sort()).toEqual([
      "IntervalReset",
      "IntervalReset",
      "IntervalReset",
      "RunStarted",
    ]);
    for (const e of written) expect(e.data.logicalDate).toBe(`${day(2)}T03:30:00.000Z`);
    // The run it started is running: triggered again, it is refused, naming it.
    const twice = chronolog(clean, args);
    expect(twice.code).toBe(8);
    expect(twice.stderr).toContain(
      `run finance_daily@${day(2)}T03:30:00.000Z is already running (try 1, manual)`,
    );
  }, 120_000);

  it("a window stopped at a failed interval is said to be stopped and taken over, never 'joined' as if pending", async () => {
    const dir = tempDataDir("plans-stopped");
    left.dirs.push(dir);
    const HOUR = 3_600_000;
    const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
    const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
    const file = join(dir, "w.yaml");
    writeFileSync(
      file,
      `workflows:
  - name: etl
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${latest}"
    endDate: "${end}"
    tasks:
      - { name: load, operator: { type: shell, command: "exit 3" } }
`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const run = `etl@${latest}`;
    const failed = (tries: number) =>
      waitUntil(`${run} to fail try ${tries}`, () => {
        const r = chronolog(dir, ["run", run, "--json"]);
        if (r.code !== 0) return undefined;
        const v = JSON.parse(r.stdout) as { run: { status: string; try: number } };
        return v.run.try === tries && v.run.status === "failed" ? v : undefined;
      });
    const p = up(dir);
    await failed(1);
    const rerun = chronolog(dir, ["rerun", run, "--failed"]);
    expect(rerun.code, rerun.stderr).toBe(0);
    await failed(2);
    p.kill("SIGTERM");
    await new Promise((r) => p.once("exit", r));

    // The rerun has ended (failed); its window on the task stopped at that interval.
    const short = latest.replace(":00.000Z", "Z");
    const before = logOf(dir);
    const dry = chronolog(dir, ["backfill", "p/a/load", "--from", short, "--to", short, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      `  takes over a rerun over ${latest} .. ${latest} stopped on p/a/load/ALL at ${latest} (failed): 0 of 1 interval done; it now walks ${short} .. ${short}`,
    );
    expect(dry.stdout).not.toContain("joined");
    expect(dry.stdout).not.toContain("is pending");
    expect(logOf(dir)).toBe(before);
  }, 120_000);
});
