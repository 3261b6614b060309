import type { ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * `backfill TASK --cancel`: a backfill asked for by mistake (the wrong days, the wrong task) is
 * taken back whole. Every task it walks returns to where it stood before it; one with an
 * interval under way finishes that interval first; the intervals of its runs that will not run
 * now are closed as cancelled, so the runs end; an operator waiting on the backfill is told.
 */
const DAY = 86_400_000;
const left = new Leftovers();
afterAll(() => left.clear());

/**
 * The UTC day `n` days after five days before the last day whose 03:30 (the workflow's slot) has
 * passed: day(4) is the latest interval, whatever the time of day (counted from midnight, the
 * latest was day(3) between 00:00 and 03:30, and a task's own schedule ran the backfill's last day).
 */
const SLOT_MS = 3.5 * 3_600_000;
const day = (n: number) =>
  new Date(Math.floor((Date.now() - SLOT_MS) / DAY) * DAY - (5 - n) * DAY).toISOString().slice(0, 10);

/**
 * A daily workflow of two tasks from five days ago, not caught up (each stands at its latest
 * interval): `load` (its shell takes `seconds` and counts its runs in the data directory) and
 * `report` after it.
 */
function declared(label: string, seconds: number): string {
  const dir = tempDataDir(label);
  left.dirs.push(dir, `${dir}-tasks`);
  const file = join(dir, "daily.yaml");
  writeFileSync(
    file,
    `workflows:
  - name: daily
    project: shop
    account: acme
    cron: "30 3 * * *"
    startDate: "${day(0)}T00:00:00Z"
    catchup: false
    tasks:
      - { name: load, idempotent: true, operator: { type: shell, command: "echo {{ ds }} >> ${dir}/loads; sleep ${seconds}" } }
      - { name: report, parents: [load], idempotent: true, operator: { type: noop } }
`,
  );
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
  return dir;
}

const LOAD = "shop/acme/load/ALL";
const REPORT = "shop/acme/report/ALL";

interface Task {
  logicalDate: string;
  prevIntervalStart: string | null;
  nextRunDate: string;
  backfill: { backfillId?: string; from?: string; until: string } | null;
}
const task = (dir: string, id: string): Task =>
  JSON.parse(chronolog(dir, ["task", id, "--json"]).stdout).task;
const position = (t: Task) => ({
  logicalDate: t.logicalDate,
  prevIntervalStart: t.prevIntervalStart,
  nextRunDate: t.nextRunDate,
});
const logOf = (dir: string) => chronolog(dir, ["log", "read", "--json", "-n", "1000000"]).stdout;

function spawned(
  dir: string,
  args: string[],
): { p: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const p = chronologSpawn(dir, args);
  left.processes.push(p);
  let out = "";
  p.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  p.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<number | null>((resolve) => p.once("exit", (code) => resolve(code)));
  return { p, out: () => out, exited };
}

describe("backfill --cancel", () => {
  it("returns every task the backfill walks to where it stood; a dry run and a refusal write nothing", () => {
    const dir = declared("cancel-plain", 0);
    const before = { load: position(task(dir, LOAD)), report: position(task(dir, REPORT)) };
    const started = chronolog(dir, [
      "backfill",
      LOAD,
      "--from",
      day(1),
      "--to",
      day(2),
      "--downstream",
      "--detach",
    ]);
    expect(started.code, started.stderr).toBe(0);
    const id = /^backfill ([0-9a-f-]{36})$/m.exec(started.stdout)?.[1] as string;
    expect(task(dir, REPORT).backfill?.backfillId).toBe(id);
    const first = `${day(1)}T03:30Z`;

    // The flags that make no sense with it, and --reason without it, are refused.
    const pending = logOf(dir);
    const stray = chronolog(dir, ["backfill", LOAD, "--cancel", "--from", day(1)]);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain("--from: does not go with --cancel");
    const detached = chronolog(dir, ["backfill", LOAD, "--cancel", "--detach"]);
    expect(detached.code).toBe(2);
    expect(detached.stderr).toContain("--detach: does not go with --cancel");
    const reasonAlone = chronolog(dir, ["backfill", LOAD, "--from", day(1), "--to", day(2), "--reason", "x"]);
    expect(reasonAlone.code).toBe(2);
    expect(reasonAlone.stderr).toContain("--reason: goes with --cancel");
    const noRange = chronolog(dir, ["backfill", LOAD]);
    expect(noRange.code).toBe(2);
    expect(noRange.stderr).toContain("--from: is required (or --cancel, to cancel a pending backfill)");

    // Dry: what it would do, nothing written.
    const dry = chronolog(dir, ["backfill", REPORT, "--cancel", "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    const back = `${before.load.logicalDate.slice(0, 16)}Z`;
    expect(dry.stdout).toBe(
      `dry run, nothing written: backfill ${id} would be cancelled:\n` +
        `  ${LOAD}: at ${first}, returns to ${back}\n` +
        `  ${REPORT}: at ${first}, returns to ${back}\n`,
    );
    expect(logOf(dir)).toBe(pending);

    // Named by the child it walks, it is cancelled on both.
    const done = chronolog(dir, ["backfill", REPORT, "--cancel", "--reason", "the wrong days"]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(
      dry.stdout.replace("dry run, nothing written: ", "").replace("would be cancelled", "cancelled"),
    );
    expect({ load: position(task(dir, LOAD)), report: position(task(dir, REPORT)) }).toEqual(before);
    expect(task(dir, LOAD).backfill).toBeNull();
    expect(chronolog(dir, ["history", LOAD]).stdout).toContain(`(backfill ${id} cancelled: the wrong days)`);

    // Nothing left to cancel: by the task, or by the id.
    const again = chronolog(dir, ["backfill", LOAD, "--cancel"]);
    expect(again.code).toBe(8);
    expect(again.stderr).toContain(`${LOAD} has no backfill pending`);
    const typo = chronolog(dir, ["backfill", id.slice(0, 8), "--cancel"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(
      `${id.slice(0, 8)} is neither a task (project/account/name[/partition]) nor a backfill's id`,
    );
    const byId = chronolog(dir, ["backfill", id.toUpperCase(), "--cancel"]);
    expect(byId.code).toBe(4);
    expect(byId.stderr).toContain(
      `no task walks backfill ${id}: it has finished, was cancelled, or never started`,
    );
  });

  it("lets the interval under way finish, closes the runs' other intervals, and tells the operator waiting", async () => {
    const dir = declared("cancel-running", 3);
    const before = position(task(dir, LOAD));
    // Asked for before the scheduler starts (which would otherwise run the tasks' own interval
    // first, and the backfill wait for it); its operator waits on it.
    const waiting = spawned(dir, ["backfill", LOAD, "--from", day(1), "--to", day(3), "--downstream"]);
    const id = await waitUntil(
      "the backfill's id",
      () => /^backfill ([0-9a-f-]{36})$/m.exec(waiting.out())?.[1],
    );
    const up = spawned(dir, ["up", "--workers", "1", "--reconcile-ms", "200", "--http", "off"]);
    await waitUntil("the first interval's load to run", () =>
      readLoads(dir).length === 1 ? true : undefined,
    );
    const cancelled = chronolog(dir, ["backfill", id, "--cancel"]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    const first = `${day(1)}T03:30Z`;
    const back = `${before.logicalDate.slice(0, 16)}Z`;
    expect(cancelled.stdout).toContain(`  ${LOAD}: finishes ${first}, under way, then returns to ${back}\n`);
    expect(cancelled.stdout).toContain(`  ${REPORT}: at ${first}, returns to ${back}\n`);
    expect(cancelled.stdout).toContain(`  run daily@${day(1)}T03:30:00.000Z: ${REPORT} cancelled\n`);

    // The operator who waited on it hears it, and how it ended.
    expect(await waiting.exited).toBe(6);
    expect(waiting.out()).toMatch(new RegExp(`backfill stopped: ${id} was cancelled by cli:`));
    // What it had done before (nothing: the first load was under way), not its windows closed.
    expect(waiting.out()).toContain("(0/6 intervals done before it; the rest not run)");
    expect(waiting.out()).not.toContain("progress 6/6");

    // The load under way finishes, then it is back where it stood; no other day runs.
    await waitUntil("load to return", () => (task(dir, LOAD).backfill === null ? true : undefined), 30_000);
    // (Its last finished interval is the one it finished, as after any backfill's end.)
    expect(position(task(dir, LOAD))).toEqual({ ...before, prevIntervalStart: `${day(1)}T03:30:00.000Z` });
    // The days of the backfill after the one under way never ran (its own schedule runs on).
    expect(readLoads(dir)[0]).toBe(day(1));
    expect(readLoads(dir)).not.toContain(day(2));
    expect(readLoads(dir)).not.toContain(day(3));
    // The backfill's run ends: load's interval succeeded, report's cancelled.
    const run = await waitUntil("the run to end", () => {
      const r = chronolog(dir, ["run", `daily@${day(1)}T03:30:00.000Z`, "--json"]);
      const v = JSON.parse(r.stdout || "null") as { run: { status: string; outcomes: object } } | null;
      return v && v.run.status !== "running" ? v.run : undefined;
    });
    expect(run.outcomes).toMatchObject({ [LOAD]: "success", [REPORT]: "cancelled" });
    // No run of the backfill's days is left going (its own schedule's run may be).
    const runs = JSON.parse(chronolog(dir, ["runs", "--json"]).stdout) as Array<{
      runId: string;
      status: string;
    }>;
    const ofBackfill = (r: { runId: string }) => [1, 2, 3].some((n) => r.runId.includes(day(n)));
    expect(runs.filter((r) => ofBackfill(r) && r.status === "running")).toEqual([]);
    // The service log says who cancelled it.
    await waitUntil("the service log's line", () =>
      up.out().includes('"msg":"backfill cancelled"') ? true : undefined,
    );
    up.p.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  }, 120_000);
});

const readLoads = (dir: string): string[] => {
  try {
    return readFileSync(join(dir, "loads"), "utf8").trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
};
