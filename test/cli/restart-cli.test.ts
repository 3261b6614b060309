import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * A restart loses no work: Ctrl-C (SIGINT) stops dispatching and lets running attempts finish
 * within the grace; what still runs then is interrupted, which is not the task's failure: an
 * idempotent task runs again at once after the restart, one that is not idempotent is left for
 * the operator (never run twice) and why says so.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Attempt {
  attempt: number;
  status: string;
  endReason: string | null;
}

function setUp(label: string, idempotent: boolean): { dir: string; task: string } {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  // The first run records its start and sleeps; a later one finds the mark and ends at once.
  const command = `echo started >> ${dir}/effects; [ -e ${dir}/ran ] && exit 0; touch ${dir}/ran; sleep 30`;
  const file = join(dir, "t.yaml");
  writeFileSync(
    file,
    `tasks:\n  - { project: p, account: a, name: slow, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: ${idempotent}, operator: { type: shell, command: "${command}" } }\n`,
  );
  expect(chronolog(dir, ["declare", file]).code).toBe(0);
  return { dir, task: "p/a/slow/ALL" };
}

function up(
  dir: string,
  grace: string,
): { p: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const p = chronologSpawn(dir, ["up", "--workers", "1", "--grace", grace]);
  left.processes.push(p);
  let err = "";
  p.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => p.once("exit", (code) => resolve(code)));
  return { p, stderr: () => err, exited };
}

const attempts = (dir: string, task: string) =>
  JSON.parse(chronolog(dir, ["attempts", task, "--json"]).stdout || "[]") as Attempt[];
const effects = (dir: string) =>
  existsSync(join(dir, "effects"))
    ? readFileSync(join(dir, "effects"), "utf8").split("\n").filter(Boolean).length
    : 0;

describe("a restart loses no work", () => {
  it("an idempotent task interrupted by Ctrl-C runs again at once after the restart", async () => {
    const { dir, task } = setUp("restart-idem", true);
    const first = up(dir, "1");
    await waitUntil("the attempt to run", () =>
      attempts(dir, task)[0]?.status === "running" ? true : undefined,
    );
    const t0 = Date.now();
    first.p.kill("SIGINT");
    await waitUntil(
      "the message",
      () => (first.stderr().includes("waiting for 1 running attempt") ? true : undefined),
      10_000,
      50,
    );
    expect(first.stderr()).toContain("Ctrl-C again to stop now");
    expect(await first.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const [a1] = attempts(dir, task);
    expect(a1).toMatchObject({ attempt: 1, status: "interrupted" });
    expect(a1?.endReason).toMatch(/^interrupted: worker shutdown \(grace of 1000 ms elapsed\)$/);
    // The restart runs it again with a new attempt, though its retry policy allows one attempt.
    up(dir, "1");
    await waitUntil("the task to finish", () => {
      const t = (
        JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout || "[]") as Array<{
          task: string;
          prevIntervalStart: string | null;
        }>
      ).find((x) => x.task === task);
      return t?.prevIntervalStart ? true : undefined;
    });
    expect(attempts(dir, task).map((a) => [a.attempt, a.status])).toEqual([
      [1, "interrupted"],
      [2, "success"],
    ]);
  }, 90_000);

  it("a task that is not idempotent is not run again: why says a shutdown interrupted it", async () => {
    const { dir, task } = setUp("restart-once", false);
    const first = up(dir, "1");
    await waitUntil("the attempt to run", () =>
      attempts(dir, task)[0]?.status === "running" ? true : undefined,
    );
    first.p.kill("SIGINT");
    expect(await first.exited).toBe(0);
    // Stopped, and once running again: why says so.
    expect(chronolog(dir, ["why", task]).stdout).toContain("a shutdown interrupted it");
    up(dir, "1");
    const why = await waitUntil("why to say it", () => {
      const r = chronolog(dir, ["why", task]);
      return r.stdout.includes("a shutdown interrupted it") ? r.stdout : undefined;
    });
    expect(why).toContain(": failed\n");
    await new Promise((r) => setTimeout(r, 1500));
    expect(effects(dir)).toBe(1);
    expect(attempts(dir, task)).toHaveLength(1);
  }, 90_000);

  it("a scheduler killed: why says that none runs, and that the attempt shown running stands so in the log only", async () => {
    const { dir, task } = setUp("restart-killed", true);
    const first = up(dir, "1");
    await waitUntil("the attempt to run", () =>
      attempts(dir, task)[0]?.status === "running" ? true : undefined,
    );
    const running = chronolog(dir, ["why", task]).stdout;
    expect(running).toContain(": running\n");
    expect(running).not.toContain("no scheduler is running");
    expect(chronolog(dir, ["tasks"]).stderr).not.toContain("no scheduler is running");
    expect(chronolog(dir, ["task", task]).stdout).not.toContain("no scheduler is running");
    first.p.kill("SIGKILL");
    await first.exited;
    const why = chronolog(dir, ["why", task]);
    expect(why.stdout).toContain(": running\n");
    expect(why.stdout).toContain(
      "  no scheduler is running on this data directory: the attempt stands so in the log only; once chronolog up starts, one whose worker is gone runs again, or waits for an operator if its task may not run twice\n",
    );
    expect(JSON.parse(chronolog(dir, ["why", task, "--json"]).stdout).scheduler).toMatch(
      /^no scheduler is running/,
    );
    // `tasks` says it beside its listing (stdout stays the listing), `task` as a line of its own.
    const listed = chronolog(dir, ["tasks"]);
    expect(listed.stdout).toMatch(/running/);
    expect(listed.stderr).toBe(
      "no scheduler is running on this data directory: 1 task listed stands where only a scheduler moves it (an attempt running or queued stands so in the log only); nothing starts or moves on until chronolog up does\n",
    );
    expect(chronolog(dir, ["task", task]).stdout).toContain(
      "\nscheduler   no scheduler is running on this data directory: the attempt stands so in the log only;",
    );
    expect(JSON.parse(chronolog(dir, ["task", task, "--json"]).stdout).scheduler).toMatch(
      /^no scheduler is running/,
    );
    // The past is read as it was: nothing said of schedulers then.
    expect(chronolog(dir, ["why", task, "--at", "0"]).stdout).not.toContain("no scheduler");
    expect(chronolog(dir, ["tasks", "--at", "0"]).stderr).not.toContain("no scheduler");
  }, 90_000);

  it("a second Ctrl-C stops at once instead of waiting out the grace", async () => {
    const { dir, task } = setUp("restart-now", true);
    const first = up(dir, "60");
    await waitUntil("the attempt to run", () =>
      attempts(dir, task)[0]?.status === "running" ? true : undefined,
    );
    const t0 = Date.now();
    first.p.kill("SIGINT");
    await waitUntil(
      "the message",
      () => (first.stderr().includes("waiting for 1 running attempt") ? true : undefined),
      10_000,
      50,
    );
    first.p.kill("SIGINT");
    expect(await first.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(first.stderr()).toContain("stopping now: the running attempts are interrupted");
    // Its stderr, a pipe here (a log collector's, say), is JSON lines, these two included.
    for (const line of first.stderr().split("\n").filter(Boolean))
      expect(() => JSON.parse(line), line).not.toThrow();
    expect(attempts(dir, task)[0]?.endReason).toMatch(/^interrupted: /);
  }, 90_000);
});
