import type { ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const HOUR = 3_600_000;
const TASK = "demo/acme/hourly/ALL";

const left = new Leftovers();
afterAll(() => left.clear());

/** Starts `chronolog up` and resolves once it says it is up (or rejects if it exits first). */
async function startUp(dir: string): Promise<ChildProcess> {
  const up = chronologSpawn(dir, ["up", "--workers", "1"]);
  left.processes.push(up);
  let logs = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not up after 30 s: ${logs}`)), 30_000);
    const onData = (chunk: Buffer) => {
      logs += chunk.toString("utf8");
      if (logs.includes('"msg":"chronolog is up"')) {
        clearTimeout(timer);
        up.removeListener("exit", onExit);
        resolve();
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code ?? signal}) before it was up: ${logs}`));
    };
    // The log lines go to stderr; stdout is read too so that neither pipe fills.
    up.stdout?.on("data", () => {});
    up.stderr?.on("data", onData);
    up.once("exit", onExit);
  });
  return up;
}

/** Resolves with the exit code and stderr once `p` exits, or rejects after `ms`. */
function exitOf(p: ChildProcess, ms: number): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  let stderr = "";
  p.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  return new Promise((resolve, reject) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve({ code: p.exitCode, stderr, ms: 0 });
    const timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
    p.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: Date.now() - started });
    });
  });
}

function eventTypes(dir: string): string[] {
  const r = chronolog(dir, ["history", TASK, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as { type: string }).type);
}

describe("one scheduler per embedded log", () => {
  const dir = tempDataDir("lock");
  left.dirs.push(dir);
  const hour = Math.floor(Date.now() / HOUR) * HOUR;
  // Four intervals to catch up; the schedule ends a minute after the last of them, so an hour
  // that turns during the test adds none.
  const latest = new Date(hour - HOUR).toISOString();
  const end = new Date(hour - HOUR + 60_000).toISOString();
  const taskYaml = (name: string, command: string) => `tasks:
  - project: demo
    account: acme
    name: ${name}
    cron: "0 * * * *"
    startDate: "${new Date(hour - 4 * HOUR).toISOString()}"
    endDate: "${end}"
    idempotent: true
    operator: { type: shell, command: "${command}" }
`;
  let first: ChildProcess;

  it("refuses a second scheduler at once, naming the holder, and the first runs on", async () => {
    const file = join(dir, "hourly.yaml");
    writeFileSync(file, taskYaml("hourly", "sleep 2; echo landed {{ ts }}"));
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.code, declared.stderr).toBe(0);
    first = await startUp(dir);
    // An attempt of the first is under way when the second starts.
    await waitUntil("an attempt to start", () =>
      eventTypes(dir).includes("AttemptStarted") ? true : undefined,
    );

    const second = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(second);
    const refused = await exitOf(second, 15_000);
    expect(refused.code).toBe(8);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^chronolog: state: the data directory ${dir} is being scheduled by pid ${first.pid} on host ${hostname()} since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ; stop it first\\n$`,
      ),
    );

    // Another data directory given this one's task directory: refused too, before it clears
    // the staging there (the first's attempt may be staging in it), naming the holder's data
    // directory.
    const other = tempDataDir("lock-other");
    left.dirs.push(other);
    const third = chronologSpawn(other, ["up", "--workers", "1", "--task-dir", `${dir}-tasks`]);
    left.processes.push(third);
    const shared = await exitOf(third, 15_000);
    expect(shared.code, shared.stderr).toBe(8);
    expect(shared.stderr).toContain(
      `chronolog: state: the task directory ${dir}-tasks is in use by pid ${first.pid} on host ${hostname()} since `,
    );
    expect(shared.stderr).toContain(
      `(data directory ${dir}): each data or worker directory needs a task directory of its own (--task-dir)`,
    );
    expect(existsSync(join(other, "log.db"))).toBe(false);

    await waitUntil("the four intervals to run", () => {
      const r = chronolog(dir, ["tasks", "--json"]);
      const [t] = JSON.parse(r.stdout) as Array<{ prevIntervalStart: string | null }>;
      return t?.prevIntervalStart === latest ? true : undefined;
    });
    expect(first.exitCode).toBeNull();
    const types = eventTypes(dir);
    expect(types.filter((t) => t === "AttemptSucceeded")).toHaveLength(4);
    expect(types.filter((t) => t === "AttemptFailed" || t === "AttemptAbandoned")).toEqual([]);
  }, 90_000);

  it("lets read and operator commands work beside it", () => {
    for (const args of [
      ["tasks"],
      ["tasks", "--json"],
      ["why", TASK],
      ["task", TASK],
      ["pause", TASK],
      ["resume", TASK],
    ]) {
      const r = chronolog(dir, args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    const file = join(dir, "other.yaml");
    writeFileSync(file, taskYaml("other", "echo other {{ ts }}"));
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.code, declared.stderr).toBe(0);
    expect(first.exitCode).toBeNull();
  }, 60_000);

  it("after SIGKILL, the next start takes over: no stale lock", async () => {
    first.kill("SIGKILL");
    await exitOf(first, 10_000);
    // The dead holder's record is still there; it does not hold anything.
    expect(existsSync(join(dir, "scheduler.lock.json"))).toBe(true);
    first = await startUp(dir);
    const second = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(second);
    const refused = await exitOf(second, 15_000);
    expect(refused.code).toBe(8);
    expect(refused.stderr).toContain(`being scheduled by pid ${first.pid} on host ${hostname()}`);
  }, 60_000);

  it("a normal stop (SIGTERM) lets it go", async () => {
    first.kill("SIGTERM");
    const stopped = await exitOf(first, 20_000);
    expect(stopped.code, `signal ${first.signalCode}: ${stopped.stderr}`).toBe(0);
    expect(existsSync(join(dir, "scheduler.lock.json"))).toBe(false);
    const next = await startUp(dir);
    next.kill("SIGTERM");
    expect((await exitOf(next, 20_000)).code).toBe(0);
  }, 60_000);
});
