import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { FailedReport, KnownReport, RunCommand } from "../src/protocol.js";
import { harness, runCmd, shell, sleep, waitFor } from "./helpers.js";

const noop = { type: "noop" };
const batch = (...messages: RunCommand[]) => ({ kind: "batch" as const, messages });

describe("WorkerRuntime", () => {
  it("reports started (with the worker's pid) then succeeded, stamped by the clock", async () => {
    const at = new Date("2026-11-28T03:00:00.000Z");
    const { runtime, reports, finished } = harness({ clock: () => at });
    runtime.handle(batch(runCmd(shell("sleep 0.05"), { token: "a", attempt: 2 })));
    await finished("a");
    expect(reports).toEqual([
      {
        kind: "started",
        token: "a",
        attempt: 2,
        instanceStream: "instance-sales/acme/orders/ALL@2026-11-28T02:00:00.000Z",
        workerId: "w-test",
        at: at.toISOString(),
        pid: process.pid,
      },
      expect.objectContaining({
        kind: "succeeded",
        token: "a",
        attempt: 2,
        at: at.toISOString(),
        exitCode: 0,
      }),
    ]);
  });

  it("leaves out the start of a success made before its start was sent, not of a failure", async () => {
    const { runtime, reports, finished, batches } = harness();
    runtime.handle(batch(runCmd(noop, { token: "quick" }), runCmd({ type: "teleport" }, { token: "bad" })));
    await finished("quick");
    await finished("bad");
    // The success names the worker: the start is the success's own time less its duration.
    expect(reports.filter((r) => "token" in r && r.token === "quick")).toEqual([
      expect.objectContaining({ kind: "succeeded", workerId: "w-test", durationMs: expect.any(Number) }),
    ]);
    expect(reports.filter((r) => "token" in r && r.token === "bad").map((r) => r.kind)).toEqual([
      "started",
      "failed",
    ]);
    // Both outcomes and the one start went in one batch.
    expect(batches).toHaveLength(1);
  });

  it("runs at most `capacity` attempts at once, starting the rest in FIFO order", async () => {
    const { runtime, reports, finished } = harness({ capacity: 2 });
    const cmds = ["q1", "q2", "q3", "q4", "q5"].map((token) => runCmd(shell("sleep 0.2"), { token }));
    runtime.handle(batch(...cmds));
    await sleep(100);
    expect(reports.filter((r) => r.kind === "started").map((r) => "token" in r && r.token)).toEqual([
      "q1",
      "q2",
    ]);
    expect(runtime.running).toBe(2);
    expect(runtime.queued).toBe(3);
    await finished("q5");
    const order = reports.filter((r) => r.kind === "started").map((r) => "token" in r && r.token);
    expect(order).toEqual(["q1", "q2", "q3", "q4", "q5"]);
    // Never more than two between a start and its finish.
    let inFlight = 0;
    for (const r of reports) {
      if (r.kind === "started") inFlight++;
      if (r.kind === "succeeded" || r.kind === "failed") inFlight--;
      expect(inFlight).toBeLessThanOrEqual(2);
    }
  });

  it("sends the reports of one tick as one batch: 10,000 noop attempts in few batches", async () => {
    const { runtime, batches, reports } = harness({ capacity: 64 });
    const cmds = Array.from({ length: 10_000 }, (_, i) => runCmd(noop, { token: `n${i}` }));
    const t0 = performance.now();
    runtime.handle(batch(...cmds));
    await waitFor(() => reports.filter((r) => r.kind === "succeeded").length === 10_000, 10_000);
    const ms = performance.now() - t0;
    console.log(
      `10,000 noop attempts through one WorkerRuntime: ${ms.toFixed(1)} ms in ${batches.length} batches`,
    );
    expect(reports.filter((r) => r.kind === "succeeded")).toHaveLength(10_000);
    // Each ended in the batch of its start: no start was sent.
    expect(reports.filter((r) => r.kind === "started")).toHaveLength(0);
    expect(batches.length).toBeLessThan(200);
    expect(ms).toBeLessThan(1000);
  });

  it("heartbeats every leaseSeconds/3 while an attempt runs, and not after", async () => {
    const { runtime, ofToken, finished } = harness();
    runtime.handle(batch(runCmd(shell("sleep 0.35"), { token: "hb", leaseSeconds: 0.15 })));
    const done = await finished("hb");
    const beats = ofToken("hb").filter((r) => r.kind === "heartbeat").length;
    expect(beats).toBeGreaterThanOrEqual(4);
    expect(beats).toBeLessThanOrEqual(Math.ceil(done.durationMs / 50) + 2);
    await sleep(120);
    expect(ofToken("hb").filter((r) => r.kind === "heartbeat").length).toBe(beats);
  });

  it("answers a query with the queried tokens it runs or queues", async () => {
    const { runtime, reports, finished } = harness({ capacity: 1 });
    runtime.handle(batch(runCmd(shell("sleep 0.2"), { token: "run1" }), runCmd(noop, { token: "wait1" })));
    runtime.handleCommand({ kind: "query", requestId: "r1", tokens: ["run1", "wait1", "other"] });
    runtime.handleCommand({ kind: "query", requestId: "r2", tokens: [] });
    const known = await waitFor(() => {
      const k = reports.filter((r): r is KnownReport => r.kind === "known");
      return k.length === 2 && k;
    });
    expect(known).toEqual([
      { kind: "known", requestId: "r1", workerId: "w-test", running: ["run1", "wait1"] },
      { kind: "known", requestId: "r2", workerId: "w-test", running: ["run1", "wait1"] },
    ]);
    await finished("wait1");
    runtime.handleCommand({ kind: "query", requestId: "r3", tokens: ["run1", "wait1"] });
    const after = await waitFor(() =>
      reports.find((r): r is KnownReport => r.kind === "known" && r.requestId === "r3"),
    );
    expect(after.running).toEqual([]);
  });

  it("cancels a running shell attempt and a queued one, reporting each failed `cancelled: <reason>`", async () => {
    const { runtime, ofToken, finished } = harness({ capacity: 1 });
    runtime.handle(batch(runCmd(shell("sleep 10"), { token: "c1" }), runCmd(noop, { token: "c2" })));
    await sleep(50);
    runtime.handleCommand({ kind: "cancel", token: "c2", reason: "not needed" });
    runtime.handleCommand({ kind: "cancel", token: "c1", reason: "fail-fast run" });
    const t0 = Date.now();
    const r1 = (await finished("c1")) as FailedReport;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(r1.error).toEqual({ kind: "exception", message: "cancelled: fail-fast run" });
    const r2 = (await finished("c2")) as FailedReport;
    expect(r2.error).toEqual({ kind: "exception", message: "cancelled: not needed" });
    // Cancelled in the queue, it never began (so no start is claimed for it); the other had.
    expect(r2.neverStarted).toBe(true);
    expect(r1).not.toHaveProperty("neverStarted");
    expect(ofToken("c2").map((r) => r.kind)).toEqual(["failed"]);
    expect(runtime.cancel("unknown", "x")).toBe(false);
  });

  it("cancels an attempt while its secrets resolve: its secret's command is stopped, its task never runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cancel-secrets-"));
    const ran = join(dir, "ran");
    const { runtime, finished } = harness();
    runtime.handle(
      batch(
        runCmd(shell(`touch ${ran}`), {
          token: "s1",
          secrets: { SLOW: { command: `sleep 5; echo value-of-the-secret` } },
        }),
      ),
    );
    await sleep(200);
    const t0 = Date.now();
    runtime.handleCommand({ kind: "cancel", token: "s1", reason: "fenced" });
    const r = (await finished("s1")) as FailedReport;
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(r.error).toEqual({ kind: "exception", message: "cancelled: fenced" });
    await sleep(200);
    expect(existsSync(ran)).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });

  it("ignores a duplicate RunCommand for a token it runs, queues or has just finished", async () => {
    const { runtime, ofToken, finished } = harness({ capacity: 1 });
    const first = runCmd(shell("sleep 0.1"), { token: "d1" });
    const queued = runCmd(noop, { token: "d2" });
    runtime.handle(batch(first, queued, first, queued));
    await sleep(20);
    runtime.handle(batch(first, queued));
    await finished("d2");
    await finished("d1");
    // Re-sent after it finished: not run again either.
    runtime.handle(batch(first, queued));
    await sleep(50);
    expect(ofToken("d1").map((r) => r.kind)).toEqual(["started", "succeeded"]);
    // (A noop ends in the batch of its start, which is then left out.)
    expect(ofToken("d2").map((r) => r.kind)).toEqual(["succeeded"]);
  });

  it("reports an invalid operator as a failed attempt", async () => {
    const { runtime, finished } = harness();
    runtime.handle(batch(runCmd({ type: "teleport" }, { token: "bad" })));
    const r = (await finished("bad")) as FailedReport;
    expect(r.error.kind).toBe("exception");
    expect(r.error.message).toContain("teleport");
  });

  it("shutdown lets running attempts finish within the grace, drops the queue, then closes", async () => {
    const { runtime, reports, ofToken } = harness({ capacity: 1 });
    runtime.handle(batch(runCmd(shell("sleep 0.1"), { token: "s1" }), runCmd(noop, { token: "s2" })));
    await sleep(20);
    runtime.handleCommand({ kind: "shutdown", graceMs: 5000 });
    runtime.handle(batch(runCmd(noop, { token: "s3" })));
    await runtime.closed;
    expect(ofToken("s1").map((r) => r.kind)).toEqual(["started", "succeeded"]);
    expect(ofToken("s2")).toEqual([]);
    expect(ofToken("s3")).toEqual([]);
    expect(reports.at(-1)).toMatchObject({ kind: "succeeded", token: "s1" });
  });

  it("a remote worker's shutdown reports what it drops from the queue interrupted, never started", async () => {
    const { runtime, ofToken } = harness({ capacity: 1, reportQueuedAtShutdown: true });
    runtime.handle(batch(runCmd(shell("sleep 0.1"), { token: "q1" }), runCmd(noop, { token: "q2" })));
    await sleep(20);
    await runtime.shutdown(5000);
    expect(ofToken("q1").map((r) => r.kind)).toEqual(["started", "succeeded"]);
    expect(ofToken("q2")).toEqual([
      expect.objectContaining({
        kind: "failed",
        error: { kind: "interrupted", message: "worker shutdown" },
        neverStarted: true,
      }),
    ]);
  });

  it("shutdown kills what is still running when the grace runs out", async () => {
    const { runtime, finished } = harness();
    runtime.handle(batch(runCmd(shell("trap '' TERM; sleep 10; sleep 10"), { token: "k1" })));
    await sleep(50);
    const t0 = Date.now();
    await runtime.shutdown(100);
    expect(Date.now() - t0).toBeLessThan(1500);
    const r = (await finished("k1")) as FailedReport;
    expect(r.error.kind).toBe("interrupted");
    expect(r.error.message).toBe("worker shutdown (grace of 100 ms elapsed)");
  });

  it("a second shutdown with no grace stops what still runs at once, interrupted", async () => {
    const { runtime, finished } = harness();
    runtime.handle(batch(runCmd(shell("trap '' TERM; sleep 10; sleep 10"), { token: "k2" })));
    await sleep(50);
    const t0 = Date.now();
    void runtime.shutdown(30_000);
    await sleep(50);
    await runtime.shutdown(0);
    expect(Date.now() - t0).toBeLessThan(1500);
    const r = (await finished("k2")) as FailedReport;
    expect(r.error).toEqual({ kind: "interrupted", message: "worker shutdown (stopped at once)" });
  });
});
