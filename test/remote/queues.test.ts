import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { api } from "../api/support.js";
import { chronolog, chronologAsync, Leftovers, tempDataDir } from "../support/cli.js";
import { completed, declareTasks, freePort, of, startScheduler, startWorker, workToken } from "./support.js";

/**
 * Queues, black-box: a real `chronolog up` with its API on loopback and real `chronolog worker`
 * processes. Tasks of a queue run only on a worker serving it; a queue with no worker waits
 * until one connects; a work token serves only its queues; nothing changes for tasks with none.
 */
describe("remote workers: queues", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("runs a queue's tasks only on its workers, holds a queue with none, and refuses a token's other queues", async () => {
    const dir = tempDataDir("remote-queues");
    left.dirs.push(dir, `${dir}-tasks`);
    const out = join(dir, "ran");
    declareTasks(dir, [
      { name: "ta", queue: "a", command: `echo hello from a; echo ta >> ${out}` },
      { name: "ta2", queue: "a", command: `echo ta2 >> ${out}` },
      // Not idempotent: it runs only once its start is on record (the start permission travels too).
      { name: "tn", queue: "a", idempotent: false, command: `echo tn >> ${out}` },
      { name: "tb", queue: "b", command: `echo tb >> ${out}` },
      { name: "tl", command: `echo tl >> ${out}` },
    ]);
    const wa = workToken(dir, "wa", ["a"]);
    const wb = workToken(dir, "wb", ["b"]);
    const s = await startScheduler(left, dir, await freePort());
    startWorker(left, s.url, wa, ["a"], "wa-1");

    let events = await completed(dir, ["ta", "ta2", "tn", "tl"]);
    // Queue b has no worker: its task has not even been intended.
    expect(of(events, "tb")).toEqual([]);

    // A token for a may not serve b: refused by the API, and a worker asking exits non-zero saying why.
    const asked = await api(s.url, "/workers", {
      token: wa,
      body: { protocol: 1, id: "intruder", host: "h", queues: ["b"], capacity: 1, version: "t", running: [] },
    });
    expect(asked.status).toBe(403);
    expect(asked.body.detail).toBe("token wa may serve queue a: not b");
    const wdir = tempDataDir("remote-intruder");
    left.dirs.push(wdir, `${join(wdir, "w")}-tasks`);
    const intruder = await chronologAsync(wdir, [
      "worker",
      "--connect",
      s.url,
      "--token",
      wa,
      "--queue",
      "b",
      "--dir",
      join(wdir, "w"),
    ]);
    expect(intruder.code).toBe(2);
    expect(intruder.stderr).toContain("may serve queue a: not b");
    // A work token reads nothing.
    expect((await api(s.url, "/tasks", { token: wa })).status).toBe(403);
    // A worker of another protocol version is refused, saying which the scheduler speaks.
    const old = await api(s.url, "/workers", {
      token: wa,
      body: { protocol: 2, id: "future", host: "h", queues: ["a"], capacity: 1, version: "t", running: [] },
    });
    expect(old.status).toBe(400);
    expect(old.body.detail).toMatch(/speaks worker protocol 1, the worker speaks 2/);

    // A worker for b connects: b's task runs there.
    startWorker(left, s.url, wb, ["b"], "wb-1");
    events = await completed(dir, ["tb"]);

    const workersOf = (name: string) =>
      new Set(
        of(events, name)
          .filter((e) => e.type === "AttemptStarted" || e.type === "AttemptSucceeded")
          .map((e) => (e.data as { workerId?: string }).workerId)
          .filter((w) => w !== undefined),
      );
    expect(workersOf("ta")).toEqual(new Set(["wa-1"]));
    expect(workersOf("ta2")).toEqual(new Set(["wa-1"]));
    expect(workersOf("tn")).toEqual(new Set(["wa-1"]));
    expect(workersOf("tb")).toEqual(new Set(["wb-1"]));
    expect([...workersOf("tl")].every((w) => /^w\d+-\d+$/.test(w as string))).toBe(true);
    // A worker's reports are written as it.
    const succeeded = of(events, "ta").find((e) => e.type === "AttemptSucceeded");
    expect(succeeded?.metadata.actor).toBe(`worker:wa-1@${hostname()}`);
    // Recorded connected before it was sent anything.
    const connected = events.find((e) => e.type === "WorkerConnected" && e.streamId === "worker-wa-1");
    const firstStart = of(events, "ta").find(
      (e) => e.type === "AttemptStarted" || e.type === "AttemptSucceeded",
    );
    expect(connected && firstStart && connected.position < firstStart.position).toBe(true);
    expect(readFileSync(out, "utf8").split("\n").filter(Boolean).sort()).toEqual([
      "ta",
      "ta2",
      "tb",
      "tl",
      "tn",
    ]);

    // The remote attempt's output came home: `logs` prints it, checked against its SHA-256.
    const logs = chronolog(dir, ["logs", "p/a/ta/ALL"]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain("hello from a");
  }, 120_000);
});
