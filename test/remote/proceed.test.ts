import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import {
  completed,
  declareTasks,
  freePort,
  of,
  readLog,
  startScheduler,
  startWorker,
  workToken,
} from "./support.js";

const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];

/**
 * A remote attempt that is not idempotent waits for its start permission (`proceed`), which the
 * scheduler sends once its start is durable. Black-box: the scheduler is SIGKILLed at that very
 * moment (its start written, the permission not sent: CHRONOLOG_SCHEDULER_FAULT=exit-before-proceed),
 * then started again. Whether its worker comes back at once, or only after the restarted
 * scheduler has recorded the lease expired (no worker knew the attempt) and alerted an operator,
 * the attempt runs exactly once: it is never left waiting, and never run twice.
 */
describe("remote workers: a scheduler killed while an attempt waits for its start permission", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  async function killedBeforeProceed(name: string, workerBackAfterTheLease: boolean) {
    const dir = tempDataDir(name);
    left.dirs.push(dir, `${dir}-tasks`);
    const runs = join(dir, "runs");
    declareTasks(dir, [
      {
        name: "once",
        queue: "p",
        idempotent: false,
        leaseSeconds: 3,
        command: `echo run >> ${runs}; sleep 1`,
      },
    ]);
    const token = workToken(dir, "wp", ["p"]);
    const port = await freePort();
    const fault = {
      CHRONOLOG_SCHEDULER_FAULT: "exit-before-proceed",
      CHRONOLOG_FAULT_ONCE: join(dir, "fault-fired"),
    };
    const first = await startScheduler(left, dir, port, "127.0.0.1", [], fault);
    const w = startWorker(left, first.url, token, ["p"], "wp-1");
    // The scheduler kills itself once the attempt's start is on record, before the permission goes.
    await first.exited;
    expect(existsSync(join(dir, "fault-fired"))).toBe(true);
    if (workerBackAfterTheLease) w.child.kill("SIGSTOP");
    const second = await startScheduler(left, dir, port, "127.0.0.1", [], fault);
    if (workerBackAfterTheLease) {
      await waitUntil(
        "the restarted scheduler to record the lease expired",
        async () =>
          of(await readLog(dir), "once").some((e) => e.type === "AttemptHeartbeatExpired") ? true : undefined,
        60_000,
      );
      w.child.kill("SIGCONT");
    }
    const events = await completed(dir, ["once"]).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}\nscheduler:\n${second.output}`);
    });
    const once = of(events, "once");
    // Ran once: one side effect, one attempt, its start on record before it ran.
    expect(lines(runs)).toEqual(["run"]);
    expect(once.filter((e) => e.type === "DispatchIntended")).toHaveLength(1);
    expect(once.filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
    expect(once.findIndex((e) => e.type === "AttemptStarted")).toBeLessThan(
      once.findIndex((e) => e.type === "AttemptSucceeded"),
    );
    return { once };
  }

  it("its worker reconnects to the restarted scheduler: adopted, told to proceed, run once", async () => {
    const { once } = await killedBeforeProceed("remote-proceed-at-once", false);
    expect(once.some((e) => e.type === "AttemptHeartbeatExpired")).toBe(false);
  }, 120_000);

  it("its worker comes back after the lease expired on record: its heartbeat resumes it, run once", async () => {
    const { once } = await killedBeforeProceed("remote-proceed-after-lease", true);
    const types = once.map((e) => e.type);
    // Started, the lease recorded expired (left for an operator), started again by its heartbeat.
    expect(types.filter((t) => t === "AttemptStarted")).toHaveLength(2);
    expect(types.indexOf("AttemptHeartbeatExpired")).toBeGreaterThan(types.indexOf("AttemptStarted"));
  }, 120_000);
});
