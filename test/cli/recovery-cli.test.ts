import type { ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";

/**
 * Recovery after a crash of `chronolog up`: what the killed process left in flight is settled as
 * the new one starts, without a reconcile pass (every run here has `--reconcile-ms 600000`, so
 * none comes): an attempt running on one of its workers is interrupted, as by a shutdown, so an
 * idempotent task runs again apart from its retry budget and one that is not idempotent is left
 * for the operator; an intent it never handed to a
 * worker is tried again. And a worker of the pool that stops answering (SIGSTOP) does not hold
 * up what goes to the others.
 */
const HOUR = 3_600_000;
const NO_PASS = ["--reconcile-ms", "600000"];
const left = new Leftovers();
const stopped: number[] = [];
afterAll(async () => {
  for (const pid of stopped) {
    try {
      signalProcess(pid, "SIGCONT");
    } catch {
      // already gone
    }
  }
  await left.clear();
});

interface Attempt {
  attempt: number;
  status: string;
  workerId: string | null;
  endReason: string | null;
}

interface Up {
  readonly p: ChildProcess;
  readonly stderr: () => string;
  readonly exited: Promise<unknown>;
}

function up(dir: string, args: string[], env: Record<string, string> = {}): Up {
  const p = chronologSpawn(dir, ["up", "--workers", "2", ...NO_PASS, ...args], env);
  left.processes.push(p);
  let err = "";
  p.stdout?.resume();
  p.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise((resolve) => p.once("exit", resolve));
  return { p, stderr: () => err, exited };
}

/**
 * Declares one hourly task per name, for one interval; `command` runs in it. Its side effect is
 * a line in `<dir>/effects-<name>`.
 */
function declareTasks(dir: string, tasks: Array<{ name: string; idempotent: boolean; command: string }>) {
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  const lines = tasks.map(
    (t) =>
      `  - { project: p, account: a, name: ${t.name}, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: ${t.idempotent}, retry: { maxAttempts: 1 }, operator: { type: shell, command: ${JSON.stringify(`echo "$CHRONOLOG_TOKEN" >> ${dir}/effects-${t.name}; ${t.command}`)} } }`,
  );
  const file = join(dir, `tasks-${tasks.map((t) => t.name).join("-")}.yaml`);
  writeFileSync(file, `tasks:\n${lines.join("\n")}\n`);
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
}

const attempts = (dir: string, name: string) =>
  JSON.parse(chronolog(dir, ["attempts", `p/a/${name}/ALL`, "--json"]).stdout || "[]") as Attempt[];
const effects = (dir: string, name: string) => {
  const f = join(dir, `effects-${name}`);
  return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean).length : 0;
};
const upLine = (u: Up) => (u.stderr().includes('"msg":"chronolog is up"') ? true : undefined);

/** The worker processes `chronolog up` forked, lowest pid (the first forked) first. */
function workerPids(pid: number): number[] {
  const f = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(f)) return [];
  return readFileSync(f, "utf8")
    .split(/\s+/)
    .filter(Boolean)
    .map(Number)
    .sort((a, b) => a - b);
}

describe("recovery after a crash of chronolog up", () => {
  it("settles the killed process's running attempts at start-up, with no reconcile pass", async () => {
    const dir = tempDataDir("recover-running");
    left.dirs.push(dir);
    // The first run of each leaves a file in its working directory and sleeps; a later one finds
    // its mark and ends at once.
    const sleepOnce = (name: string) =>
      `[ -e ${dir}/ran-${name} ] && exit 0; touch ${dir}/ran-${name}; echo scratch > scratch.txt; sleep 60`;
    declareTasks(dir, [
      { name: "idem", idempotent: true, command: sleepOnce("idem") },
      { name: "once", idempotent: false, command: sleepOnce("once") },
    ]);
    const first = up(dir, []);
    await waitUntil("both attempts to run", () =>
      attempts(dir, "idem")[0]?.status === "running" && attempts(dir, "once")[0]?.status === "running"
        ? true
        : undefined,
    );
    // Its worker processes killed with it (as by an out-of-memory kill of the group), no one is
    // left to remove the attempts' working directories: they stay until the restart.
    const pool = workerPids(first.p.pid as number);
    first.p.kill("SIGKILL");
    for (const pid of pool) signalProcess(pid, "SIGKILL");
    await first.exited;
    const work = `${dir}-tasks/work`;
    left.dirs.push(`${dir}-tasks`);
    await waitUntil("the killed attempts' files", () =>
      readdirSync(work).filter((d) => existsSync(join(work, d, "scratch.txt"))).length === 2
        ? true
        : undefined,
    );

    const again = up(dir, []);
    await waitUntil("the restart", () => upLine(again), 30_000, 50);
    await waitUntil(
      "the idempotent task to run again and finish",
      () => (attempts(dir, "idem")[1]?.status === "success" ? true : undefined),
      30_000,
    );
    const idem = attempts(dir, "idem");
    // Interrupted by the kill, not failed: the run again is apart from the retry budget.
    expect(idem.map((a) => [a.attempt, a.status])).toEqual([
      [1, "interrupted"],
      [2, "success"],
    ]);
    expect(idem[0]?.endReason).toContain("belonged to an earlier scheduler process and is gone");
    expect(effects(dir, "idem")).toBe(2);
    // The restart removed them (the second attempt's own went as it ended).
    expect(again.stderr()).toContain('"workDirs":2');
    await waitUntil("no working directory left", () => (readdirSync(work).length === 0 ? true : undefined));
    // The one that is not idempotent may have had its side effect: it is failed, not run again.
    const once = await waitUntil(
      "the other task's attempt to be settled",
      () => {
        const a = attempts(dir, "once");
        return a[0]?.status === "interrupted" ? a : undefined;
      },
      10_000,
    );
    expect(once).toHaveLength(1);
    expect(once[0]?.endReason).toContain("belonged to an earlier scheduler process and is gone");
    expect(effects(dir, "once")).toBe(1);
    const why = chronolog(dir, ["why", "p/a/once/ALL"]).stdout;
    expect(why).toContain(": failed");
    expect(why).toContain(
      "its scheduler process ended (killed or crashed) while it ran; it is not run again on its own, as the task is not idempotent",
    );
  }, 90_000);

  it("tries again at start-up an intent the killed process never handed to a worker", async () => {
    const dir = tempDataDir("recover-intent");
    left.dirs.push(dir);
    declareTasks(dir, [{ name: "once", idempotent: false, command: "true" }]);
    // The first process kills itself once the intent is durable, before its dispatch.
    const first = up(dir, [], {
      CHRONOLOG_SCHEDULER_FAULT: "exit-after-intent",
      CHRONOLOG_FAULT_ONCE: join(dir, "fault-fired"),
    });
    await first.exited;
    expect(existsSync(join(dir, "fault-fired"))).toBe(true);
    expect(attempts(dir, "once").map((a) => a.status)).toEqual(["queued"]);

    up(dir, []);
    await waitUntil(
      "the task to run",
      () => (attempts(dir, "once").at(-1)?.status === "success" ? true : undefined),
      30_000,
    );
    const all = attempts(dir, "once");
    expect(all.map((a) => a.status)).toEqual(["abandoned", "success"]);
    expect(all[0]?.endReason).toContain(
      "dispatch never confirmed by a worker: it belonged to an earlier scheduler process",
    );
    expect(effects(dir, "once")).toBe(1);
  }, 90_000);

  it("leaves for an operator an intent whose scheduler ended before its dispatch four times in a row", async () => {
    const dir = tempDataDir("recover-intent-cap");
    left.dirs.push(dir);
    declareTasks(dir, [{ name: "fatal", idempotent: true, command: "true" }]);
    // Every process dies once its intent is durable, before the dispatch (as a task that took
    // the service down before its start was recorded would make it): four intents, four ends.
    for (let i = 0; i < 4; i++) await up(dir, [], { CHRONOLOG_SCHEDULER_FAULT: "exit-after-intent" }).exited;
    expect(attempts(dir, "fatal").map((a) => a.status)).toEqual([
      "abandoned",
      "abandoned",
      "abandoned",
      "queued",
    ]);
    // The fifth abandons the fourth and runs it no more.
    const fifth = up(dir, []);
    await waitUntil("the fifth process to be up", () => upLine(fifth));
    const all = attempts(dir, "fatal");
    expect(all.map((a) => a.status)).toEqual(["abandoned", "abandoned", "abandoned", "abandoned"]);
    expect(all[3]?.endReason).toContain("the 4th such end in a row: not run again on its own");
    expect(effects(dir, "fatal")).toBe(0);
    const why = chronolog(dir, ["why", "p/a/fatal/ALL"]).stdout;
    expect(why).toContain("the 4th such end in a row");
    expect(why).toContain("chronolog retry p/a/fatal/ALL");
  }, 90_000);

  it("a stopped worker does not hold up dispatch to the other one", async () => {
    const dir = tempDataDir("recover-stopped");
    left.dirs.push(dir);
    const u = up(dir, []);
    await waitUntil("the scheduler to be up", () => upLine(u), 30_000, 50);
    const pids = await waitUntil("two workers", () => {
      const p = workerPids(u.p.pid as number);
      return p.length === 2 ? p : undefined;
    });
    // Both workers have started; the first forked is the one an idle pool would pick first.
    declareTasks(dir, [{ name: "warm", idempotent: true, command: "true" }]);
    await waitUntil(
      "an attempt to show the workers ready",
      () => (attempts(dir, "warm")[0]?.status === "success" ? true : undefined),
      30_000,
    );
    const [firstWorker] = pids as [number, number];
    signalProcess(firstWorker, "SIGSTOP");
    stopped.push(firstWorker);
    // Time for the pool to find that the worker no longer answers.
    await new Promise((r) => setTimeout(r, 1000));
    declareTasks(dir, [{ name: "after", idempotent: false, command: "true" }]);
    await waitUntil(
      "the task declared after the stop to run",
      () => (attempts(dir, "after")[0]?.status === "success" ? true : undefined),
      20_000,
    );
    const [a] = attempts(dir, "after");
    expect(a?.workerId).toMatch(/-2$/);
    expect(effects(dir, "after")).toBe(1);
    signalProcess(firstWorker, "SIGCONT");
  }, 90_000);
});
