import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { faultsFromEnv, isFaultTarget } from "../src/faults.js";
import { parseOperator } from "../src/operators/spec.js";
import { WorkerPool } from "../src/pool.js";
import type { FailedReport, RunCommand, WorkerReport } from "../src/protocol.js";
import { harness, runCmd, shell, sleep, tempDir, waitFor } from "./helpers.js";

const workerMain = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const pools: WorkerPool[] = [];

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close(0)));
});

/** A real forked pool whose workers run with CHRONOLOG_FAULT=<fault>. */
function faultyPool(fault: string, size = 1) {
  const pool = new WorkerPool({
    size,
    capacity: 4,
    workerModule: workerMain,
    env: { CHRONOLOG_FAULT: fault },
  });
  pools.push(pool);
  const batches: (readonly WorkerReport[])[] = [];
  pool.onReports((rs) => batches.push(rs));
  const all = () => batches.flat();
  const terminals = (token: string) =>
    all().filter((r) => (r.kind === "succeeded" || r.kind === "failed") && r.token === token);
  const terminal = (token: string) => terminals(token)[0];
  return { pool, batches, all, terminals, terminal };
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : "");

describe("fault hooks (CHRONOLOG_FAULT)", () => {
  it("are inactive when unset; parse a comma-separated list; reject unknown names", () => {
    expect(faultsFromEnv({})).toBeUndefined();
    expect(faultsFromEnv({ CHRONOLOG_FAULT: " , " })).toBeUndefined();
    const both = faultsFromEnv({ CHRONOLOG_FAULT: "worker-exit-before-report, worker-duplicate-reports" });
    expect(both?.duplicateFinalReports).toBe(true);
    expect(typeof both?.afterOperator).toBe("function");
    const dup = faultsFromEnv({ CHRONOLOG_FAULT: "worker-duplicate-reports" });
    expect(dup).toEqual({ afterOperator: undefined, duplicateFinalReports: true });
    expect(() => faultsFromEnv({ CHRONOLOG_FAULT: "worker-exit-before-reprot" })).toThrow(/unknown fault/);
  });

  it("target an attempt by CHRONOLOG_FAULT_TARGET=1 in the RunCommand env or the shell operator's env", () => {
    const sh = (env: Record<string, string>) => parseOperator(shell("true", { env }));
    const cmd = (env?: Record<string, string>): RunCommand => runCmd(shell("true"), env ? { env } : {});
    expect(isFaultTarget(cmd({ CHRONOLOG_FAULT_TARGET: "1" }), sh({}))).toBe(true);
    expect(isFaultTarget(cmd(), sh({ CHRONOLOG_FAULT_TARGET: "1" }))).toBe(true);
    expect(isFaultTarget(cmd({ CHRONOLOG_FAULT_TARGET: "1" }), parseOperator({ type: "noop" }))).toBe(true);
    expect(isFaultTarget(cmd(), sh({}))).toBe(false);
    expect(isFaultTarget(cmd({ CHRONOLOG_FAULT_TARGET: "0" }), sh({ OTHER: "1" }))).toBe(false);
  });

  it("the runtime calls afterOperator only for attempts whose operator ran, before the final report", async () => {
    const calls: string[] = [];
    let reportsAtCall = -1;
    const h = harness({
      faults: {
        afterOperator: (cmd) => {
          calls.push(cmd.token);
          reportsAtCall = h.reports.filter((r) => r.kind === "succeeded" && r.token === cmd.token).length;
        },
      },
    });
    h.runtime.handle({
      kind: "batch",
      messages: [
        runCmd(shell("exit 3"), { token: "ran-fail" }),
        runCmd(shell("true"), { token: "ran-ok" }),
        runCmd({ type: "teleport" }, { token: "never-ran" }),
        runCmd(shell("true"), { token: "awaits-permission", awaitProceed: true }),
      ],
    });
    await h.finished("ran-fail");
    await h.finished("ran-ok");
    await h.finished("never-ran");
    h.runtime.cancel("awaits-permission", "no");
    await h.finished("awaits-permission");
    await sleep(20);
    expect(calls.sort()).toEqual(["ran-fail", "ran-ok"]);
    expect(reportsAtCall).toBe(0);
  });

  it("worker-exit-before-report: the worker dies after the targeted task's side effect; the pool reports it lost", async () => {
    const { pool, all, terminal, terminals } = faultyPool("worker-exit-before-report");
    await pool.ready();
    const victim = pool.stats()[0]!;
    const dir = await tempDir();
    const file = join(dir, "effect.txt");
    const other = join(dir, "other.txt");

    // Untargeted attempts run and report normally under the same fault.
    pool.dispatch([runCmd(shell(`echo ok >> ${other}`), { token: "untargeted" })]);
    expect((await waitFor(() => terminal("untargeted"))).kind).toBe("succeeded");
    expect(lines(other)).toBe("ok\n");

    const cmd = runCmd(shell(`echo ran >> ${file}`), {
      token: "doomed",
      env: { CHRONOLOG_FAULT_TARGET: "1" },
    });
    pool.dispatch([cmd]);
    const lost = (await waitFor(() => terminal("doomed"), 5000)) as FailedReport;
    expect(lost).toMatchObject({ kind: "failed", token: "doomed", attempt: 1, workerId: victim.workerId });
    expect(lost.error).toEqual({
      kind: "lost",
      message: `worker ${victim.workerId} (pid ${victim.pid}) exited with signal SIGKILL`,
    });
    // The operator ran exactly once; its own result never arrived.
    expect(lines(file)).toBe("ran\n");
    expect(all().some((r) => r.kind === "started" && r.token === "doomed")).toBe(true);

    // A replacement worker takes over; nothing re-runs the attempt by itself.
    await waitFor(() => pool.workerCount === 1 && pool.stats()[0]!.ready, 5000);
    expect(pool.stats()[0]!.workerId).not.toBe(victim.workerId);
    await sleep(200);
    expect(terminals("doomed")).toHaveLength(1);
    expect(lines(file)).toBe("ran\n");
  });

  it("worker-exit-before-report also fires for a failing targeted task aimed via the operator env", async () => {
    const { pool, terminal } = faultyPool("worker-exit-before-report");
    await pool.ready();
    const file = join(await tempDir(), "effect.txt");
    pool.dispatch([
      runCmd(shell(`echo ran >> ${file}; exit 4`, { env: { CHRONOLOG_FAULT_TARGET: "1" } }), {
        token: "doomed-fail",
      }),
    ]);
    const lost = (await waitFor(() => terminal("doomed-fail"), 5000)) as FailedReport;
    expect(lost.error.kind).toBe("lost");
    expect(lines(file)).toBe("ran\n");
  });

  it("worker-duplicate-reports: every final report arrives twice, in two separate batches", async () => {
    const { pool, batches, terminals } = faultyPool("worker-duplicate-reports");
    await pool.ready();
    pool.dispatch([
      runCmd(shell("echo hi"), { token: "dup-ok" }),
      runCmd(shell("exit 2"), { token: "dup-fail" }),
      runCmd({ type: "noop" }, { token: "dup-noop" }),
    ]);
    for (const token of ["dup-ok", "dup-fail", "dup-noop"]) {
      const twice = await waitFor(() => terminals(token).length === 2 && terminals(token));
      expect(twice[1]).toEqual(twice[0]);
      const where = batches.flatMap((b, i) =>
        b.some((r) => (r.kind === "succeeded" || r.kind === "failed") && r.token === token) ? [i] : [],
      );
      expect(where).toHaveLength(2);
    }
    expect(terminals("dup-ok")[0]).toMatchObject({ kind: "succeeded", stdoutTail: "hi\n" });
    expect(terminals("dup-fail")[0]).toMatchObject({ kind: "failed", exitCode: 2 });
    await sleep(100);
    for (const token of ["dup-ok", "dup-fail", "dup-noop"]) expect(terminals(token)).toHaveLength(2);
    // Started and heartbeat reports are not duplicated.
    const started = batches.flat().filter((r) => r.kind === "started" && r.token === "dup-ok");
    expect(started).toHaveLength(1);
    // The pool's accounting is unharmed.
    expect(pool.stats()[0]!.running).toBe(0);
  });
});
