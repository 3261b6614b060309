import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * The service log of `chronolog up`: one line per thing that happened, readable as it comes, and
 * with what operators and producers did from other processes, each with its actor.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

/** `chronolog up` with its service log in JSON lines, gathered as they come, and its exit code. */
function upWithJsonLog(dir: string, workers: number) {
  const proc = chronologSpawn(dir, ["up", "--workers", String(workers), "--http", "off"], {
    CHRONOLOG_LOG_FORMAT: "json",
  });
  left.processes.push(proc);
  const up = {
    proc,
    log: "",
    exited: new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code))),
  };
  proc.stderr?.on("data", (d: Buffer) => {
    up.log += d.toString();
  });
  return up;
}

describe("chronolog up's service log", () => {
  it("is one line per event, and names what other processes did", async () => {
    const dir = tempDataDir("service-log");
    left.dirs.push(dir);
    const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
    const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
    const file = join(dir, "t.yaml");
    writeFileSync(
      file,
      `tasks:
  - { project: p, account: a, name: ok, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: true, operator: { type: noop } }
  - { project: p, account: a, name: bad, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: true, operator: { type: shell, command: "echo no such table: orders >&2; exit 3" } }
  - { project: p, account: a, name: later, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: true, operator: { type: noop } }
`,
    );
    expect(chronolog(dir, ["pause", "p/a/later"]).code).toBe(4);
    const up = chronologSpawn(dir, ["up", "--workers", "1"], {
      CHRONOLOG_LOG_FORMAT: "pretty",
      NO_COLOR: "1",
    });
    left.processes.push(up);
    let log = "";
    up.stderr?.on("data", (d: Buffer) => {
      log += d.toString();
    });
    await waitUntil("chronolog to be up", () => (log.includes("chronolog is up") ? true : undefined));
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    await waitUntil("the failure to be logged", () => (log.includes("interval failed") ? true : undefined));
    expect(chronolog(dir, ["pause", "p/a/later", "--reason", "maintenance"]).code).toBe(0);
    await waitUntil("the pause to be logged", () => (log.includes("task paused") ? true : undefined));
    // An operator's retry and mark of the failed interval are said too, with who did them.
    expect(chronolog(dir, ["retry", "p/a/bad", "--interval", latest]).code).toBe(0);
    await waitUntil("the retry to be logged", () => (log.includes("interval retried") ? true : undefined));
    await waitUntil("the retry to fail", () => (log.split("interval failed").length > 2 ? true : undefined));
    const mark = chronolog(dir, [
      "mark",
      "p/a/bad",
      "--interval",
      latest,
      "--skipped",
      "--reason",
      "no orders today",
    ]);
    expect(mark.code, mark.stderr).toBe(0);
    await waitUntil("the mark to be logged", () => (log.includes("interval marked") ? true : undefined));
    const lines = log.split("\n").filter((l) => l.trim() !== "");
    // Every line is one event: a time first, never a field continued on a line of its own.
    for (const l of lines) expect(l, l).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] /);
    const line = (what: string) => lines.find((l) => l.includes(what)) ?? "";
    expect(line("declared: ")).toMatch(/declared: 3 new tasks .*"?actor"?: ?"?cli:/);
    expect(line("attempt failed")).toContain("no such table: orders");
    expect(line("interval completed")).toContain("p/a/ok/ALL");
    expect(line("task paused")).toMatch(/p\/a\/later\/ALL.*maintenance.*cli:/);
    expect(line("interval retried")).toMatch(/p\/a\/bad\/ALL.*cli:/);
    expect(line("interval marked")).toMatch(/p\/a\/bad\/ALL.*skipped.*no orders today.*cli:/);
    // attempts says it too, without --output.
    const attempts = chronolog(dir, ["attempts", "p/a/bad"]);
    expect(attempts.stdout).toMatch(/attempt 2, last line of stderr: no such table: orders\n$/);
  }, 60_000);

  it("writes JSON lines whole, the last ones before the process exits", async () => {
    const dir = tempDataDir("service-log-json");
    left.dirs.push(dir);
    const up = upWithJsonLog(dir, 1);
    await waitUntil("chronolog to be up", () =>
      up.log.includes('"msg":"chronolog is up"') ? true : undefined,
    );
    up.proc.kill("SIGTERM");
    expect(await up.exited).toBe(0);
    await new Promise((r) => setImmediate(r));
    const lines = up.log.split("\n");
    expect(lines.pop()).toBe("");
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    // The lines of its stop, logged as it exits, are out.
    expect(lines.at(-1)).toContain('"msg":"stopped"');
  }, 60_000);

  it("exits when asked even once the reader of its log is gone", async () => {
    const dir = tempDataDir("service-log-gone");
    left.dirs.push(dir);
    // A minutely task two days behind: thousands of intervals to catch up, a line each.
    const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 48 * HOUR).toISOString();
    const file = join(dir, "t.yaml");
    writeFileSync(
      file,
      `tasks:\n  - { project: p, account: a, name: busy, cron: "* * * * *", startDate: "${start}", idempotent: true, operator: { type: noop } }\n`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const up = upWithJsonLog(dir, 2);
    await waitUntil("intervals to complete", () =>
      up.log.includes('"msg":"interval completed"') ? true : undefined,
    );
    // The reader goes away (a log collector that died) while lines keep coming; then a stop.
    up.proc.stderr?.destroy();
    await new Promise((r) => setTimeout(r, 300));
    expect(up.proc.exitCode).toBeNull();
    up.proc.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  }, 60_000);
});
