import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const HOUR = 3_600_000;

/** The live children of a process, read from /proc. */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, parent] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(parent) === ppid && state !== "Z") out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
const left = new Leftovers();
afterAll(() => left.clear());

describe("chronolog up --warm-shells", () => {
  it("refuses a count that is not a whole number, before it creates anything", () => {
    const dir = join(tempDataDir("up-flags"), "data");
    left.dirs.push(dir);
    for (const bad of ["-1", "two", "1.5"]) {
      const r = chronolog(dir, ["up", "--warm-shells", bad]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`--warm-shells takes a whole number, 0 or more, not "${bad}"`);
    }
    expect(existsSync(dir)).toBe(false);
  });

  it("with 0, starts every shell task in a new shell, and they run to the end", async () => {
    const dir = tempDataDir("up-cold");
    left.dirs.push(dir);
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const start = new Date(hour - 4 * HOUR).toISOString();
    // The schedule ends at its fourth interval: an hour that turns during the test adds none.
    const latest = new Date(hour - HOUR).toISOString();
    const file = join(dir, "hourly.yaml");
    writeFileSync(
      file,
      `tasks:
  - project: demo
    account: acme
    name: hourly
    cron: "0 * * * *"
    startDate: "${start}"
    endDate: "${latest}"
    idempotent: true
    operator: { type: shell, command: "echo landed {{ ts }}" }
`,
    );
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.code, declared.stderr).toBe(0);
    const up = chronologSpawn(dir, ["up", "--workers", "1", "--warm-shells", "0"]);
    left.processes.push(up);
    // Four hours of history to catch up, one interval after the other.
    await waitUntil("the four intervals to run", () => {
      const r = chronolog(dir, ["tasks", "--json"]);
      const [t] = JSON.parse(r.stdout) as Array<{ prevIntervalStart: string | null }>;
      return t?.prevIntervalStart === latest ? true : undefined;
    });
    const history = chronolog(dir, ["history", "demo/acme/hourly/ALL", "--json"]);
    const succeeded = history.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string })
      .filter((e) => e.type === "AttemptSucceeded");
    expect(succeeded).toHaveLength(4);
    // Its worker keeps no shell waiting: with the default, it would keep two.
    const [worker] = childrenOf(up.pid as number);
    expect(worker).toBeDefined();
    expect(childrenOf(worker as number)).toEqual([]);
  }, 60_000);

  it("by default, each worker keeps two shells waiting", async () => {
    const dir = tempDataDir("up-warm");
    left.dirs.push(dir);
    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    // A child is the worker's copy of itself until it has executed the shell: each is looked
    // at again until both are shells (or the wait ends and the test fails).
    const program = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0];
      } catch {
        return undefined;
      }
    };
    const shells = await waitUntil("the worker's two shells", () => {
      const [worker] = childrenOf(up.pid as number);
      const c = worker === undefined ? [] : childrenOf(worker);
      return c.length === 2 && c.every((pid) => program(pid) === "/bin/sh") ? c : undefined;
    });
    expect(shells.map(program)).toEqual(["/bin/sh", "/bin/sh"]);
  }, 60_000);
});
