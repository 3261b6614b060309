import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { FailedReport, KnownReport, RunCommand } from "../src/protocol.js";
import { harness, runCmd, shell, sleep, tempDir, waitFor } from "./helpers.js";

const batch = (...messages: RunCommand[]) => ({ kind: "batch" as const, messages });

/** A gated shell attempt whose only effect is one line appended to `file`. */
const appending = (file: string, token: string, over: Partial<RunCommand> = {}) =>
  runCmd(shell(`echo ran >> ${file}`), { token, awaitProceed: true, leaseSeconds: 0.15, ...over });

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : "");

describe("WorkerRuntime start gating (awaitProceed)", () => {
  it("reports started, heartbeats and holds its slot, but runs nothing until proceed", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, reports, ofToken, finished } = harness();
    runtime.handle(batch(appending(file, "g1")));
    await waitFor(() => ofToken("g1").find((r) => r.kind === "started"));
    await sleep(250);
    expect(lines(file)).toBe("");
    expect(runtime.running).toBe(1);
    expect(runtime.waiting).toBe(1);
    // The lease covers the wait: heartbeats every leaseSeconds/3 (50 ms).
    expect(ofToken("g1").filter((r) => r.kind === "heartbeat").length).toBeGreaterThanOrEqual(3);

    runtime.handleCommand({ kind: "query", requestId: "r1", tokens: ["g1", "other"] });
    const known = await waitFor(() =>
      reports.find((r): r is KnownReport => r.kind === "known" && r.requestId === "r1"),
    );
    expect(known.running).toEqual(["g1"]);

    // A proceed for a token this worker does not have changes nothing.
    runtime.handleCommand({ kind: "proceed", token: "nobody" });
    expect(runtime.proceed("nobody")).toBe(false);
    await sleep(50);
    expect(lines(file)).toBe("");
    expect(runtime.waiting).toBe(1);

    runtime.handle({ kind: "batch", messages: [{ kind: "proceed", token: "g1" }] });
    const r = await finished("g1");
    expect(r.kind).toBe("succeeded");
    expect(lines(file)).toBe("ran\n");
    expect(runtime.waiting).toBe(0);
    expect(runtime.running).toBe(0);
    const kinds = ofToken("g1").map((x) => x.kind);
    expect(kinds[0]).toBe("started");
    expect(kinds.at(-1)).toBe("succeeded");
    // A late duplicate proceed is ignored too.
    expect(runtime.proceed("g1")).toBe(false);
  });

  it("a cancel while waiting reports failed `cancelled: <reason>` and never runs the operator", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, ofToken, finished } = harness();
    runtime.handle(batch(appending(file, "g2")));
    await sleep(100);
    runtime.handleCommand({ kind: "cancel", token: "g2", reason: "not needed" });
    const r = (await finished("g2")) as FailedReport;
    expect(r.error).toEqual({ kind: "exception", message: "cancelled: not needed" });
    expect(r.durationMs).toBe(0);
    expect(runtime.waiting).toBe(0);
    expect(runtime.running).toBe(0);

    // A proceed after the cancel does not bring it back.
    runtime.handleCommand({ kind: "proceed", token: "g2" });
    const beats = ofToken("g2").filter((x) => x.kind === "heartbeat").length;
    await sleep(200);
    expect(lines(file)).toBe("");
    expect(ofToken("g2").filter((x) => x.kind === "heartbeat").length).toBe(beats);
    expect(ofToken("g2").filter((x) => x.kind === "succeeded" || x.kind === "failed")).toHaveLength(1);
  });

  it("a proceed and a cancel in the same batch: the cancel wins, nothing runs", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, finished } = harness();
    runtime.handle(batch(appending(file, "g3")));
    await sleep(20);
    runtime.handle({
      kind: "batch",
      messages: [
        { kind: "proceed", token: "g3" },
        { kind: "cancel", token: "g3", reason: "changed my mind" },
      ],
    });
    const r = (await finished("g3")) as FailedReport;
    expect(r.error.message).toBe("cancelled: changed my mind");
    await sleep(100);
    expect(lines(file)).toBe("");
  });

  it("a waiting attempt occupies a capacity slot", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, ofToken, finished } = harness({ capacity: 1 });
    runtime.handle(batch(appending(file, "slot"), runCmd({ type: "noop" }, { token: "behind" })));
    await sleep(150);
    expect(ofToken("behind")).toEqual([]);
    expect(runtime.queued).toBe(1);
    runtime.proceed("slot");
    await finished("slot");
    expect((await finished("behind")).kind).toBe("succeeded");
  });

  it("remembers a proceed that arrives while the attempt is still queued", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, ofToken, finished } = harness({ capacity: 1 });
    runtime.handle(batch(runCmd(shell("sleep 0.1"), { token: "first" }), appending(file, "early")));
    await sleep(20);
    expect(runtime.proceed("early")).toBe(true);
    expect((await finished("early")).kind).toBe("succeeded");
    expect(lines(file)).toBe("ran\n");
    expect(ofToken("early")[0]?.kind).toBe("started");
  });

  it("gates a noop too, heartbeating while it waits", async () => {
    const { runtime, ofToken, finished } = harness();
    runtime.handle(
      batch(runCmd({ type: "noop" }, { token: "gnoop", awaitProceed: true, leaseSeconds: 0.06 })),
    );
    await sleep(150);
    expect(ofToken("gnoop").some((r) => r.kind === "succeeded")).toBe(false);
    expect(ofToken("gnoop").filter((r) => r.kind === "heartbeat").length).toBeGreaterThanOrEqual(2);
    runtime.proceed("gnoop");
    expect((await finished("gnoop")).kind).toBe("succeeded");
  });

  it("shutdown drops waiting attempts unrun (failed, interrupted by the shutdown) and lets running ones finish", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, ofToken } = harness();
    runtime.handle(batch(appending(file, "w1"), runCmd(shell("sleep 0.2"), { token: "r1" })));
    await sleep(30);
    const t0 = Date.now();
    runtime.handleCommand({ kind: "shutdown", graceMs: 5000 });
    // Too late: the attempt is already stopped.
    runtime.handleCommand({ kind: "proceed", token: "w1" });
    await runtime.closed;
    expect(Date.now() - t0).toBeLessThan(2000);
    const w1 = ofToken("w1").at(-1) as FailedReport;
    expect(w1.kind).toBe("failed");
    expect(w1.error).toEqual({ kind: "interrupted", message: "worker shutdown" });
    expect(ofToken("r1").map((r) => r.kind)).toEqual(["started", "succeeded"]);
    expect(lines(file)).toBe("");
  });

  it("shutdown with no grace also drops a waiting attempt, interrupted by the shutdown", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, finished } = harness();
    runtime.handle(batch(appending(file, "w2")));
    await sleep(20);
    await runtime.shutdown(0);
    runtime.killAll("coordinator disconnected");
    const r = (await finished("w2")) as FailedReport;
    expect(r.error).toEqual({ kind: "interrupted", message: "worker shutdown" });
    expect(lines(file)).toBe("");
  });

  it("an attempt without awaitProceed runs at once, and a proceed for it is harmless", async () => {
    const file = join(await tempDir(), "out.txt");
    const { runtime, finished } = harness();
    runtime.handle(batch(appending(file, "ungated", { awaitProceed: false })));
    runtime.handleCommand({ kind: "proceed", token: "ungated" });
    expect((await finished("ungated")).kind).toBe("succeeded");
    expect(lines(file)).toBe("ran\n");
  });
});
