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
 * Kills with remote attempts in flight, black-box: a worker SIGKILLed mid-attempt (its attempt is
 * retried once its lease runs out, not lost), and the scheduler SIGKILLed while remote attempts
 * run (the worker reconnects to the restarted scheduler, which adopts them: none runs twice,
 * none is lost). Tasks append to files to count their runs.
 */
describe("remote workers: kills", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("retries the attempt of a remote worker SIGKILLed mid-attempt once its lease runs out", async () => {
    const dir = tempDataDir("remote-kill-worker");
    left.dirs.push(dir, `${dir}-tasks`);
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    declareTasks(dir, [
      {
        name: "tk",
        queue: "k",
        leaseSeconds: 3,
        command: `echo start >> ${starts}; sleep 3; echo end >> ${ends}`,
      },
    ]);
    const token = workToken(dir, "wk", ["k"]);
    const s = await startScheduler(left, dir, await freePort());
    const first = startWorker(left, s.url, token, ["k"], "wk-1");
    await waitUntil("the attempt to start on the worker", () =>
      lines(starts).length === 1 ? true : undefined,
    );
    first.child.kill("SIGKILL");
    await first.exited;
    // Another worker of the queue takes the retry.
    startWorker(left, s.url, token, ["k"], "wk-2");
    const events = await completed(dir, ["tk"]);
    const tk = of(events, "tk");
    expect(tk.some((e) => e.type === "AttemptHeartbeatExpired")).toBe(true);
    const succeeded = tk.filter((e) => e.type === "AttemptSucceeded");
    expect(succeeded).toHaveLength(1);
    expect((succeeded[0]?.data as { attempt: number } | undefined)?.attempt).toBe(2);
    // The killed worker's shell died with it: one end only, the retry's.
    expect(lines(ends)).toEqual(["end"]);
    expect(lines(starts)).toEqual(["start", "start"]);
    expect(
      events.some((e) => e.type === "WorkerDisconnected" && (e.data as { worker: string }).worker === "wk-1"),
    ).toBe(true);
  }, 120_000);

  it("adopts the remote attempts after the scheduler is SIGKILLed and restarted: none twice, none lost", async () => {
    const dir = tempDataDir("remote-kill-scheduler");
    left.dirs.push(dir, `${dir}-tasks`);
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    const names = ["s1", "s2", "s3", "s4"];
    declareTasks(
      dir,
      names.map((name) => ({
        name,
        queue: "s",
        leaseSeconds: 30,
        command: `echo ${name} >> ${starts}; sleep 5; echo ${name} >> ${ends}`,
      })),
    );
    const token = workToken(dir, "ws", ["s"]);
    const port = await freePort();
    const first = await startScheduler(left, dir, port);
    const w = startWorker(left, first.url, token, ["s"], "ws-1", ["--capacity", "4"]);
    await waitUntil("every attempt to start on the worker, on record", async () => {
      const events = await readLog(dir);
      return names.every((n) => of(events, n).some((e) => e.type === "AttemptStarted")) ? true : undefined;
    });
    first.child.kill("SIGKILL");
    await first.exited;
    const second = await startScheduler(left, dir, port);
    const events = await completed(dir, names).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}\nscheduler:\n${second.output}`);
    });

    expect(lines(starts).sort()).toEqual(names);
    expect(lines(ends).sort()).toEqual(names);
    for (const n of names) {
      const ev = of(events, n);
      expect(ev.filter((e) => e.type === "DispatchIntended")).toHaveLength(1);
      expect(ev.filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
    }
    const worker = events.filter((e) => e.streamId === "worker-ws-1").map((e) => e.type);
    expect(worker).toEqual(["WorkerConnected", "WorkerDisconnected", "WorkerConnected"]);
    const restarted = events.find((e) => e.type === "WorkerDisconnected");
    expect((restarted?.data as { reason: string } | undefined)?.reason).toBe("scheduler restarted");
    const again = events.filter((e) => e.type === "WorkerConnected").at(-1);
    // Every attempt announced, running or finished with its report not yet delivered, adopted.
    expect((again?.data as { running: string[] } | undefined)?.running).toHaveLength(names.length);
  }, 120_000);
});
