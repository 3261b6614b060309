import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";

/**
 * What killed attempts and checkpoints leave in the data directory (empty staging directories,
 * what an unfinished attempt staged, half-written snapshot files) is removed when `chronolog
 * up` starts, under the data directory's lock; what a finished attempt staged and kept stays.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

function up(dir: string): { p: ChildProcess; stderr: () => string; exited: Promise<unknown> } {
  const p = chronologSpawn(dir, ["up", "--workers", "2", "--reconcile-ms", "600000"]);
  left.processes.push(p);
  let err = "";
  p.stdout?.resume();
  p.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return { p, stderr: () => err, exited: new Promise((resolve) => p.once("exit", resolve)) };
}

function declare(dir: string, tasks: Array<{ name: string; command: string }>): void {
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  const lines = tasks.map(
    (t) =>
      `  - { project: p, account: a, name: ${t.name}, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: false, operator: { type: shell, command: ${JSON.stringify(t.command)} } }`,
  );
  writeFileSync(join(dir, "t.yaml"), `tasks:\n${lines.join("\n")}\n`);
  const r = chronolog(dir, ["declare", join(dir, "t.yaml")]);
  expect(r.code, r.stderr).toBe(0);
}

/** The worker processes `chronolog up` forked. */
function workerPids(pid: number): number[] {
  const f = `/proc/${pid}/task/${pid}/children`;
  return existsSync(f) ? readFileSync(f, "utf8").split(/\s+/).filter(Boolean).map(Number) : [];
}

const isUp = (stderr: string) => (stderr.includes('"msg":"chronolog is up"') ? true : undefined);
const ls = (d: string) => (existsSync(d) ? readdirSync(d).sort() : []);

describe("leftovers of killed processes", () => {
  it("removes the staging directories of attempts killed with their scheduler", async () => {
    const dir = tempDataDir("leftover-staging");
    left.dirs.push(dir);
    declare(dir, [
      { name: "quiet", command: "sleep 60" },
      { name: "staged", command: 'echo part > "$CHRONOLOG_STAGING_DIR/out.csv"; sleep 60' },
    ]);
    // Attempts' staging directories are beside the data directory, in its task directory.
    const staging = join(`${dir}-tasks`, "staging");
    left.dirs.push(`${dir}-tasks`);
    const first = up(dir);
    await waitUntil("both attempts to have their staging directories", () => {
      const names = ls(staging);
      if (names.length !== 2) return undefined;
      return names.some((n) => existsSync(join(staging, n, "out.csv"))) ? true : undefined;
    });
    // The whole process tree is killed at once (as by a power cut, or a service manager's
    // SIGKILL to its control group): no worker lives on to clean up after its attempts.
    for (const pid of workerPids(first.p.pid as number)) signalProcess(pid, "SIGKILL");
    first.p.kill("SIGKILL");
    await first.exited;
    expect(ls(staging)).toHaveLength(2);

    const again = up(dir);
    await waitUntil("the restart", () => isUp(again.stderr()), 30_000, 50);
    // Neither attempt runs again (not idempotent): nothing new is staged.
    await waitUntil(
      "the staging directories to go",
      () => (ls(staging).length === 0 ? true : undefined),
      10_000,
      50,
    );
    expect(ls(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  }, 90_000);

  it("removes empty staging directories and half-written checkpoints, and keeps staged outputs", async () => {
    const dir = tempDataDir("leftover-files");
    left.dirs.push(dir);
    declare(dir, [{ name: "idle", command: "true" }]);
    const staging = join(`${dir}-tasks`, "staging");
    left.dirs.push(`${dir}-tasks`);
    // As killed processes leave them: attempts killed before they wrote anything, checkpoints
    // killed before their rename, and one success without `publishTo` that keeps its output.
    for (let i = 0; i < 12; i++) mkdirSync(join(staging, `0b6c1e2a-killed-${i}`), { recursive: true });
    mkdirSync(join(staging, "0b6c1e2a-kept"), { recursive: true });
    writeFileSync(join(staging, "0b6c1e2a-kept", "report.csv"), "a,b\n");
    writeFileSync(join(dir, "projection.snapshot.json.4242.tmp"), '{"snapshot":{"tas');
    writeFileSync(join(dir, "projection.snapshot.json.4243.tmp"), "");
    const u = up(dir);
    await waitUntil("the scheduler to be up", () => isUp(u.stderr()), 30_000, 50);
    expect(ls(staging)).toEqual(["0b6c1e2a-kept"]);
    expect(ls(join(staging, "0b6c1e2a-kept"))).toEqual(["report.csv"]);
    expect(ls(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    expect(u.stderr()).toContain('"stagingDirs":12');
    expect(u.stderr()).toContain('"checkpointFiles":2');
  }, 90_000);
});
