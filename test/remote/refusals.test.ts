import { afterAll, describe, expect, it } from "vitest";
import { api } from "../api/support.js";
import { Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { HandWorker } from "./hand-worker.js";
import {
  declareTasks,
  freePort,
  LATEST_HOUR,
  of,
  readLog,
  startScheduler,
  streamOf,
  workToken,
} from "./support.js";

describe("remote workers: reports that are refused", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("refuses and records a forged report, one from another worker and a replayed one, and applies none", async () => {
    const dir = tempDataDir("remote-refusals");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(dir, [{ name: "tf", queue: "f", command: "true" }]);
    const token = workToken(dir, "wf", ["f"]);
    const s = await startScheduler(left, dir, await freePort());
    const one = new HandWorker(s.url, token, "hand-1");
    await one.register(["f"]);
    const run = await waitUntil("the attempt to reach the hand-made worker", () =>
      one.commands.find((c) => c.kind === "run"),
    );
    const base = {
      token: run.token as string,
      attempt: run.attempt as number,
      instanceStream: run.instanceStream as string,
      workerId: "hand-1",
      at: new Date().toISOString(),
    };
    expect(base.instanceStream).toBe(streamOf("tf"));
    expect((await one.report([{ kind: "started", ...base, pid: 1 }])).status).toBe(200);

    // A forged token, on the right attempt stream.
    const forged = await one.report([{ kind: "heartbeat", ...base, token: "forged-token" }]);
    expect(forged.status).toBe(409);
    expect(forged.body.refused[0].reason).toBe("attempt forged-token was not dispatched to worker hand-1");

    // Another worker, with a token of the same queue, reporting the first one's attempt.
    const two = new HandWorker(s.url, token, "hand-2");
    await two.register(["f"]);
    const end = { ...base, durationMs: 1, exitCode: 0, stdoutTail: "", stderrTail: "" };
    const stolen = await two.report([{ kind: "succeeded", ...end, workerId: "hand-2" }]);
    expect(stolen.status).toBe(409);
    expect(stolen.body.refused[0].reason).toBe(`attempt ${base.token} was not dispatched to worker hand-2`);
    // Nor may it speak for the first one without its session.
    const noSession = await api(s.url, "/workers/hand-1/reports", {
      token,
      headers: { "chronolog-session": two.session },
      body: { messages: [{ kind: "succeeded", ...end }] },
    });
    expect(noSession.status).toBe(409);
    expect(noSession.body.type).toBe("urn:chronolog:problem:not_registered");

    // The real end, then the same report again.
    expect((await one.report([{ kind: "succeeded", ...end }])).status).toBe(200);
    const replayed = await one.report([{ kind: "succeeded", ...end }]);
    expect(replayed.status).toBe(409);

    const events = await waitUntil("the refusals on record", async () => {
      const all = await readLog(dir);
      return all.filter((e) => e.type === "WorkerReportRefused").length === 3 &&
        all.some((e) => e.type === "IntervalCompleted")
        ? all
        : undefined;
    });
    const refused = events.filter((e) => e.type === "WorkerReportRefused").map((e) => e.data);
    expect(refused).toEqual([
      expect.objectContaining({ worker: "hand-1", kind: "heartbeat", token: "forged-token" }),
      expect.objectContaining({ worker: "hand-2", kind: "succeeded", token: base.token }),
      expect.objectContaining({ worker: "hand-1", kind: "succeeded", token: base.token }),
    ]);
    // One start and one success on the attempt, both hand-1's; nothing written as hand-2.
    const attempt = of(events, "tf").map((e) => `${e.type} ${e.metadata.actor}`);
    expect(attempt).toEqual([
      expect.stringMatching(/^DispatchIntended scheduler:/),
      "AttemptStarted worker:hand-1@handmade",
      "AttemptSucceeded worker:hand-1@handmade",
    ]);
    expect(events.some((e) => e.metadata.actor.startsWith("worker:hand-2"))).toBe(false);
    expect(LATEST_HOUR).toBe(base.instanceStream.split("@")[1]);
    one.close();
    two.close();
  }, 120_000);

  it("records a flood of forged reports within a budget: the first one by one, the rest as one count, none applied", async () => {
    const dir = tempDataDir("remote-refusal-flood");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(dir, [{ name: "tg", queue: "g", command: "sleep 600" }]);
    const token = workToken(dir, "wg", ["g"]);
    const s = await startScheduler(left, dir, await freePort());
    const w = new HandWorker(s.url, token, "flood-1");
    await w.register(["g"]);
    const run = await waitUntil("the attempt to reach the hand-made worker", () =>
      w.commands.find((c) => c.kind === "run"),
    );
    const base = {
      attempt: run.attempt as number,
      instanceStream: run.instanceStream as string,
      workerId: "flood-1",
      at: new Date().toISOString(),
    };
    const before = (await readLog(dir)).length;
    // 4,000 forged ends (1,000 a batch, the most a batch holds) and 100 forged heartbeats one by one.
    let posted = 0;
    for (let b = 0; b < 4; b++) {
      const messages = Array.from({ length: 1000 }, (_, i) => ({
        kind: "succeeded",
        ...base,
        token: `forged-${b}-${i}`,
        durationMs: 1,
        exitCode: 0,
        stdoutTail: "",
        stderrTail: "",
      }));
      const answer = await w.report(messages);
      // Every one refused, each named in the answer.
      expect(answer.status).toBe(409);
      expect(answer.body.accepted).toBe(0);
      expect(answer.body.refused).toHaveLength(1000);
      expect(answer.body.refused[999]).toEqual({
        kind: "succeeded",
        token: `forged-${b}-999`,
        reason: `attempt forged-${b}-999 was not dispatched to worker flood-1`,
      });
      posted += 1000;
    }
    for (let i = 0; i < 100; i++) {
      const answer = await w.report([{ kind: "heartbeat", ...base, token: `beat-${i}` }]);
      expect(answer.status).toBe(409);
      expect(answer.body.detail).toBe(
        `1 of 1 reports refused: attempt beat-${i} was not dispatched to worker flood-1`,
      );
      posted += 1;
    }
    expect((await w.goodbye()).status).toBe(200);
    const events = await waitUntil("the worker gone and its refusals counted", async () => {
      const all = await readLog(dir);
      return all.some((e) => e.type === "WorkerReportRefusalsCounted") ? all : undefined;
    });
    // (The attempt's own stream apart: see below.)
    const added = events.slice(before).filter((e) => !of([e], "tg").length);
    // 20 one by one, one count, one disconnection: nothing else.
    expect(added.map((e) => e.type)).toEqual([
      ...Array.from({ length: 20 }, () => "WorkerReportRefused"),
      "WorkerDisconnected",
      "WorkerReportRefusalsCounted",
    ]);
    expect(added[0]?.data).toMatchObject({ worker: "flood-1", kind: "succeeded", token: "forged-0-0" });
    expect(added.at(-1)?.data).toMatchObject({
      worker: "flood-1",
      count: posted - 20,
      reason: "attempt beat-99 was not dispatched to worker flood-1",
    });
    // The attempt itself: dispatched, never started, and ended at the worker's goodbye, to run
    // again at once, on a worker of its queue (none is left); no forged report touched it.
    const attempt = await waitUntil("the attempt ended at the goodbye", async () => {
      const own = of(await readLog(dir), "tg");
      return own.length >= 2 ? own : undefined;
    });
    expect(attempt.slice(0, 2).map((e) => e.type)).toEqual(["DispatchIntended", "AttemptFailed"]);
    expect(attempt[1]?.data).toMatchObject({
      error: { kind: "interrupted", message: "worker flood-1 stopped before starting it" },
      retryAt: expect.any(String),
    });
    // (No worker is named as having started it.)
    expect(attempt[1]?.data).not.toHaveProperty("workerId");
    // Every refusal counted in the metrics, however the log keeps it.
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toContain('chronolog_worker_reports_refused_total{recorded="each"} 20');
    expect(metrics).toContain(`chronolog_worker_reports_refused_total{recorded="counted"} ${posted - 20}`);
    w.close();
  }, 120_000);
});
