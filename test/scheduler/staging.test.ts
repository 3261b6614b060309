import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { declareTasks, LATEST_HOUR, startUp, stopUp, tasksJson, type Up } from "../faults/support.js";
import { chronolog, tempDataDir } from "../support/cli.js";
import { readPid, signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";

/**
 * Staged outputs: a task writes to its staging directory and the worker publishes it
 * atomically on success, so an attempt interrupted midway leaves nothing at the target.
 */
let dir: string;
let up: Up | null = null;
beforeEach(() => {
  dir = tempDataDir("staging");
  mkdirSync(join(dir, "effects"));
});
afterEach(async () => {
  if (up) await stopUp(up);
  up = null;
  rmSync(dir, { recursive: true, force: true });
});

describe("staged outputs", () => {
  it("publish on success; an attempt killed midway leaves nothing at the target", async () => {
    const pidFile = join(dir, "pid");
    const write = (slow: boolean) =>
      [
        "echo part1 > $CHRONOLOG_STAGING_DIR/report.csv",
        slow ? `echo $CHRONOLOG_WORKER_PID > ${pidFile}; sleep 5` : "true",
        "echo part2 >> $CHRONOLOG_STAGING_DIR/report.csv",
      ].join("; ");
    declareTasks(dir, [
      { name: "export_ok", idempotent: true, before: write(false) },
      { name: "export_killed", idempotent: false, before: write(true) },
    ]);
    // Give each task a target to publish its staging directory to.
    const yaml = readFileSync(join(dir, "tasks.yaml"), "utf8")
      .split("\n")
      .map((line) => {
        const m = /name: (export_\w+)/.exec(line);
        return m
          ? line.replace(
              "operator: { type: shell,",
              `operator: { type: shell, publishTo: "${join(dir, `out-${m[1]}`)}",`,
            )
          : line;
      })
      .join("\n");
    writeFileSync(join(dir, "tasks.yaml"), yaml);
    const declared = chronolog(dir, ["declare", join(dir, "tasks.yaml")]);
    expect(declared.stdout, declared.stderr).toContain("export_killed/ALL: changed");
    up = startUp(dir);
    const pid = await waitUntil("the slow attempt to start", () => readPid(pidFile));
    signalProcess(pid, "SIGKILL");
    await waitUntil("both tasks to settle", () => {
      const rows = tasksJson(dir);
      return rows.every((t) => t.prevIntervalStart === LATEST_HOUR || t.condition === "failed")
        ? rows
        : undefined;
    });
    // Success: the whole file, published at once.
    expect(readdirSync(join(dir, "out-export_ok"))).toEqual(["report.csv"]);
    expect(readFileSync(join(dir, "out-export_ok", "report.csv"), "utf8")).toBe("part1\npart2\n");
    // Killed midway (and, not idempotent, not retried): nothing at its target.
    expect(existsSync(join(dir, "out-export_killed"))).toBe(false);
  }, 60_000);
});
