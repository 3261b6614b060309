import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * A run keeps its history: a rerun, a trigger or a backfill of a date that already ran is a new
 * try of the run, with its own start, trigger and actor; `runs` and `run` show the tries, and
 * the critical path reads the try asked for (the latest by default).
 */
const HOUR = 3_600_000;
const MINUTE = 60_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Try {
  try: number;
  trigger: string;
  actor: string | null;
  startedAt: string;
  finishedAt: string | null;
  status: string;
  tasks: string[];
}
interface View {
  run: { status: string; try: number; trigger: string };
  tries: Try[];
  try: number;
  instances: Array<{ task: string; attempts: Array<{ attempt: number; status: string }> }>;
}

function up(dir: string): ChildProcess {
  const p = chronologSpawn(dir, ["up", "--workers", "1", "--reconcile-ms", "200"]);
  left.processes.push(p);
  // Its service log is not read here, but must not fill the pipe and stall it.
  p.stderr?.resume();
  p.stdout?.resume();
  return p;
}

const view = (dir: string, run: string, args: string[] = []) => {
  const r = chronolog(dir, ["run", run, "--json", ...args]);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as View;
};

async function finished(dir: string, run: string, tries: number): Promise<View> {
  return waitUntil(`${run} to finish try ${tries}`, () => {
    const r = chronolog(dir, ["run", run, "--json"]);
    if (r.code !== 0) return undefined;
    const v = JSON.parse(r.stdout) as View;
    return v.tries.length === tries && v.run.status !== "running" ? v : undefined;
  });
}

describe("a run keeps its tries", () => {
  it("a rerun, a trigger and a backfill of a date that ran are tries 2, 3 and 4, each with its trigger and actor", async () => {
    const dir = tempDataDir("tries");
    left.dirs.push(dir);
    const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
    const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
    // `load` fails the first time it runs, then succeeds.
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
      - { name: extract, operator: { type: shell, command: "sleep 0.2" } }
      - { name: load, parents: [extract], operator: { type: shell, command: "[ -e ${dir}/ok ] || { touch ${dir}/ok; exit 1; }; sleep 0.2" } }
`,
    );
    const d = chronolog(dir, ["declare", file]);
    expect(d.code, d.stderr).toBe(0);
    const run = `etl@${latest}`;
    const p = up(dir);
    const first = await finished(dir, run, 1);
    expect(first.run.status).toBe("failed");
    expect(first.tries[0]).toMatchObject({ try: 1, trigger: "schedule", status: "failed" });
    expect(first.tries[0]?.actor).toMatch(/^scheduler:/);

    // The run sits failed for a while before the operator reruns what failed.
    await new Promise((r) => setTimeout(r, 2000));
    const rr = chronolog(dir, ["rerun", run, "--failed"]);
    expect(rr.code, rr.stderr).toBe(0);
    const second = await finished(dir, run, 2);
    expect(second.run.status).toBe("success");
    expect(second.tries[1]).toMatchObject({
      try: 2,
      trigger: "rerun",
      status: "success",
      tasks: ["p/a/load/ALL"],
    });
    expect(second.tries[1]?.actor).toMatch(/^cli:/);
    // Try 1 keeps its own start, end and outcome.
    expect(second.tries[0]).toEqual(first.tries[0]);

    // The critical path of the rerun is the rerun's: load alone, from the try's start, not the
    // two seconds the run sat failed.
    const cp = JSON.parse(chronolog(dir, ["run", run, "--critical-path", "--json"]).stdout);
    expect(cp.try).toBe(2);
    expect(cp.links.map((l: { task: string }) => l.task)).toEqual(["p/a/load/ALL"]);
    expect(cp.links[0].waitMs).toBeLessThan(1500);
    expect(cp.wallMs).toBeLessThan(1500);
    const cp1 = JSON.parse(chronolog(dir, ["run", run, "--try", "1", "--critical-path", "--json"]).stdout);
    expect(cp1.links.map((l: { task: string }) => l.task)).toEqual(["p/a/extract/ALL", "p/a/load/ALL"]);

    // `run` shows every try, and the instances of the one asked for.
    const text = chronolog(dir, ["run", run]).stdout;
    expect(text).toContain(`run ${run}: success, 2 tries`);
    expect(text).toMatch(/\n1 +schedule +scheduler:\S+ .* failed +2\n/);
    expect(text).toMatch(/\n2 +rerun +cli:\S+ .* success +1\n/);
    expect(text).toMatch(/p\/a\/extract\/ALL +success \(kept\) +- .*its earlier outcome stands/);
    // The rerun reopened the interval: its attempt is the first of a fresh budget.
    expect(text).toMatch(/p\/a\/load\/ALL +success +attempt 1 of 1 /);
    const older = view(dir, run, ["--try", "1"]);
    expect(older.try).toBe(1);
    expect(older.instances.find((i) => i.task === "p/a/load/ALL")?.attempts.map((a) => a.status)).toEqual([
      "failed",
    ]);
    const noTry = chronolog(dir, ["run", run, "--try", "9"]);
    expect(noTry.code).toBe(4);
    expect(noTry.stderr).toContain("has no try 9 (tries: 1, 2)");

    // A trigger of the same date is try 3, a backfill of it try 4 (with who asked for it).
    const t = chronolog(dir, ["trigger", "etl", "--logical-date", latest]);
    expect(t.code, t.stderr).toBe(0);
    const third = await finished(dir, run, 3);
    expect(third.tries[2]).toMatchObject({ try: 3, trigger: "manual", status: "success" });
    expect(third.tries[2]?.actor).toMatch(/^cli:/);
    const b = chronolog(dir, ["backfill", "p/a/extract", "--from", latest, "--to", latest, "--downstream"]);
    expect(b.code, b.stderr).toBe(0);
    const fourth = await finished(dir, run, 4);
    expect(fourth.tries[3]).toMatchObject({ try: 4, trigger: "backfill", status: "success" });
    expect(fourth.tries[3]?.actor).toMatch(/^cli:/);

    const runs = chronolog(dir, ["runs", "etl"]).stdout;
    expect(runs).toMatch(new RegExp(`${run.replace(/[.]/g, "\\.")} +success +4 +backfill `));
    p.kill("SIGTERM");
  }, 90_000);

  it("a backfill of a run the scheduler no longer holds in memory reopens it as a backfill try", async () => {
    const dir = tempDataDir("tries-old");
    left.dirs.push(dir);
    // A run every minute since 1010 minutes ago: more finished runs than the scheduler keeps.
    const now = Math.floor(Date.now() / MINUTE) * MINUTE;
    const start = new Date(now - 1010 * MINUTE).toISOString();
    const end = new Date(now - 5 * MINUTE).toISOString();
    const file = join(dir, "w.yaml");
    writeFileSync(
      file,
      `workflows:
  - name: often
    project: p
    account: a
    cron: "* * * * *"
    startDate: "${start}"
    endDate: "${end}"
    tasks:
      - { name: tick, operator: { type: noop } }
`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const p = up(dir);
    const lastRun = `often@${new Date(now - 6 * MINUTE).toISOString()}`;
    await finished(dir, lastRun, 1);
    const oldest = `often@${start}`;
    // It dropped out of the recent runs the scheduler holds.
    expect(chronolog(dir, ["runs", "often"]).stdout).not.toContain(oldest.replace(":00.000Z", "Z"));
    expect(view(dir, oldest).run.status).toBe("success");
    const b = chronolog(dir, ["backfill", "p/a/tick", "--from", start, "--to", start]);
    expect(b.code, b.stderr).toBe(0);
    const again = await finished(dir, oldest, 2);
    expect(again.tries.map((t) => [t.try, t.trigger, t.status])).toEqual([
      [1, "schedule", "success"],
      [2, "backfill", "success"],
    ]);
    expect(again.tries[1]?.actor).toMatch(/^cli:/);
    p.kill("SIGTERM");
  }, 180_000);
});
