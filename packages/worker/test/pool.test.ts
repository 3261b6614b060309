import { fork } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { WorkerPool } from "../src/pool.js";
import type { Batch, FailedReport, WorkerReport } from "../src/protocol.js";
import {
  childrenOf,
  isAlive,
  processGroup,
  readPid,
  runCmd,
  shell,
  sleep,
  tempDir,
  waitFor,
} from "./helpers.js";

const workerMain = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const pools: WorkerPool[] = [];

function newPool(size = 2) {
  const pool = new WorkerPool({ size, capacity: 4, workerModule: workerMain });
  pools.push(pool);
  const reports: WorkerReport[] = [];
  pool.onReport((r) => reports.push(r));
  const terminal = (token: string) =>
    reports.find((r) => (r.kind === "succeeded" || r.kind === "failed") && r.token === token);
  return { pool, reports, terminal };
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close(0)));
});

describe("WorkerPool", () => {
  it("forks workers that report ready, and spreads attempts over the least loaded", async () => {
    const { pool, reports, terminal } = newPool(2);
    await pool.ready();
    expect(pool.workerCount).toBe(2);
    const stats = pool.stats();
    expect(stats.map((s) => s.ready)).toEqual([true, true]);
    expect(new Set(stats.map((s) => s.pid)).size).toBe(2);
    expect(reports.filter((r) => r.kind === "ready")).toHaveLength(2);

    const cmds = ["a", "b", "c", "d"].map((t) => runCmd(shell("sleep 0.3"), { token: `pool-${t}` }));
    pool.dispatch(cmds);
    expect(pool.stats().map((s) => s.running)).toEqual([2, 2]);
    const known = await pool.query([...cmds.map((c) => c.token), "nobody-has-this"]);
    expect([...known.keys()].sort()).toEqual(cmds.map((c) => c.token).sort());
    expect(new Set(known.values())).toEqual(new Set(stats.map((s) => s.workerId)));

    for (const c of cmds) expect((await waitFor(() => terminal(c.token))).kind).toBe("succeeded");
    const ranOn = new Set(reports.filter((r) => r.kind === "started").map((r) => r.workerId));
    expect(ranOn.size).toBe(2);
    expect(pool.stats().map((s) => s.running)).toEqual([0, 0]);
  });

  it("holds attempts dispatched before any worker is ready, and gives them to the ready ones", async () => {
    const { pool, reports, terminal } = newPool(2);
    expect(pool.stats().map((s) => s.ready)).toEqual([false, false]);
    const cmds = ["a", "b"].map((t) => runCmd(shell("true"), { token: `early-${t}` }));
    pool.dispatch(cmds);
    // Given to no worker yet: a worker that never gets ready holds none of them.
    expect(pool.stats().map((s) => s.running)).toEqual([0, 0]);
    for (const c of cmds) expect((await waitFor(() => terminal(c.token))).kind).toBe("succeeded");
    const readyAt = reports.findIndex((r) => r.kind === "ready");
    const startedAt = reports.findIndex((r) => r.kind === "started");
    expect(readyAt).toBeGreaterThanOrEqual(0);
    expect(startedAt).toBeGreaterThan(readyAt);
  });

  it("passes over a worker that stopped answering (SIGSTOP) while another one answers", async () => {
    const { pool, reports, terminal } = newPool(2);
    await pool.ready();
    const [first, second] = pool.stats();
    process.kill(first?.pid as number, "SIGSTOP");
    try {
      // Long enough for the pool to ask the idle worker something and hear nothing back.
      await sleep(1000);
      const cmds = ["a", "b", "c"].map((t) => runCmd(shell("true"), { token: `stopped-${t}` }));
      pool.dispatch(cmds);
      for (const c of cmds) expect((await waitFor(() => terminal(c.token))).kind).toBe("succeeded");
      const ranOn = new Set(reports.filter((r) => r.kind === "started").map((r) => r.workerId));
      expect([...ranOn]).toEqual([second?.workerId]);
    } finally {
      process.kill(first?.pid as number, "SIGCONT");
    }
  });

  it("waits for a busy worker's late answer to a query, not for a silent one's", async () => {
    const module = fileURLToPath(new URL("./fixtures/late-answers.mjs", import.meta.url));
    const busy = new WorkerPool({ size: 1, capacity: 4, workerModule: module, queryTimeoutMs: 300 });
    pools.push(busy);
    await busy.ready();
    // It keeps talking and answers after 1.5 s, five spans of the query's 300 ms: waited for.
    const known = await busy.query(["t1", "t2"]);
    expect([...known.keys()].sort()).toEqual(["t1", "t2"]);

    process.env.SILENT = "1";
    const silent = new WorkerPool({ size: 1, capacity: 4, workerModule: module, queryTimeoutMs: 300 });
    delete process.env.SILENT;
    pools.push(silent);
    await silent.ready();
    // Silent until its answer 1.5 s later: counted as knowing none once the first span is out,
    // before that answer comes.
    expect((await silent.query(["t1"])).size).toBe(0);
  });

  it("hears an answer that came while its own thread was held up past the query's span", async () => {
    const pool = new WorkerPool({ size: 1, capacity: 4, workerModule: workerMain, queryTimeoutMs: 300 });
    pools.push(pool);
    const reports: WorkerReport[] = [];
    pool.onReport((r) => reports.push(r));
    await pool.ready();
    pool.dispatch([runCmd(shell("sleep 5"), { token: "held-up" })]);
    await waitFor(() => reports.find((r) => r.kind === "started" && r.token === "held-up"));
    const known = pool.query(["held-up"]);
    // The question goes out with the pool's next flush; then this thread is busy for longer
    // than the span (as in a long garbage collection), while the worker answers at once.
    await new Promise((r) => setImmediate(r));
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 800);
    expect([...(await known).keys()]).toEqual(["held-up"]);
    pool.cancel("held-up");
  });

  it("cancels an attempt on the worker that runs it", async () => {
    const { pool, terminal } = newPool(1);
    await pool.ready();
    pool.dispatch([runCmd(shell("sleep 10"), { token: "pool-cancel" })]);
    await sleep(100);
    expect(pool.cancel("pool-cancel", "fail-fast")).toBe(true);
    expect(pool.cancel("unknown")).toBe(false);
    const r = (await waitFor(() => terminal("pool-cancel"))) as FailedReport;
    expect(r.error).toEqual({ kind: "exception", message: "cancelled: fail-fast" });
  });

  it("proceed sends an attempt's start permission to the worker that holds it", async () => {
    const { pool, reports, terminal } = newPool(2);
    await pool.ready();
    const dir = await tempDir();
    const files = ["p1", "p2", "p3"].map((t) => join(dir, `${t}.txt`));
    const cmds = ["p1", "p2", "p3"].map((t, i) =>
      runCmd(shell(`echo ran >> ${files[i]}`), { token: `pool-${t}`, awaitProceed: true, leaseSeconds: 0.3 }),
    );
    pool.dispatch(cmds);
    for (const c of cmds)
      await waitFor(() => reports.find((r) => r.kind === "started" && r.token === c.token));
    await sleep(250);
    for (const f of files) expect(existsSync(f)).toBe(false);
    expect(reports.some((r) => r.kind === "heartbeat" && r.token === "pool-p1")).toBe(true);
    // Waiting tokens are known to their worker.
    expect([...(await pool.query(cmds.map((c) => c.token))).keys()].sort()).toEqual(
      cmds.map((c) => c.token).sort(),
    );

    expect(pool.proceed("nobody-has-this")).toBe(false);
    // Proceeds for several attempts made in one tick (two workers hold them).
    expect(pool.proceed("pool-p1")).toBe(true);
    expect(pool.proceed("pool-p2")).toBe(true);
    for (const t of ["pool-p1", "pool-p2"]) expect((await waitFor(() => terminal(t))).kind).toBe("succeeded");
    expect(readFileSync(files[0]!, "utf8")).toBe("ran\n");
    expect(readFileSync(files[1]!, "utf8")).toBe("ran\n");
    // Finished: no live worker holds it any more.
    expect(pool.proceed("pool-p1")).toBe(false);

    // The third is cancelled while it waits: it never runs.
    expect(pool.cancel("pool-p3", "not needed")).toBe(true);
    const r = (await waitFor(() => terminal("pool-p3"))) as FailedReport;
    expect(r.error).toEqual({ kind: "exception", message: "cancelled: not needed" });
    expect(pool.proceed("pool-p3")).toBe(false);
    await sleep(100);
    expect(existsSync(files[2]!)).toBe(false);
  });

  it("gives shell tasks CHRONOLOG_WORKER_PID and node tasks context.workerPid: the worker's pid", async () => {
    const { pool, reports, terminal } = newPool(1);
    await pool.ready();
    const workerPid = pool.stats()[0]!.pid!;
    const mod = join(await tempDir(), "pid.mjs");
    await writeFile(mod, "export default (_args, ctx) => ctx.workerPid;\n");
    pool.dispatch([
      runCmd(shell('echo "$CHRONOLOG_WORKER_PID"', { env: { CHRONOLOG_WORKER_PID: "1" } }), {
        token: "pid-shell",
        env: { CHRONOLOG_WORKER_PID: "2" },
      }),
      runCmd({ type: "node", module: mod }, { token: "pid-node" }),
    ]);
    const sh = await waitFor(() => terminal("pid-shell"));
    const nd = await waitFor(() => terminal("pid-node"));
    expect(sh.kind).toBe("succeeded");
    expect(sh.stdoutTail).toBe(`${workerPid}\n`);
    expect(nd.kind).toBe("succeeded");
    expect(JSON.parse(nd.stdoutTail)).toBe(workerPid);
    const started = reports.find((r) => r.kind === "started" && r.token === "pid-shell");
    expect(started).toMatchObject({ pid: workerPid });
  });

  it("reports a SIGKILLed worker's attempts lost within a second, kills its tasks, and replaces it", async () => {
    const { pool, reports, terminal } = newPool(2);
    await pool.ready();
    const dir = await tempDir();
    const pidFile = join(dir, "task.pid");
    const cmd = runCmd(shell(`echo $$ > ${pidFile}; exec sleep 5`), { token: "pool-lost" });
    pool.dispatch([cmd]);
    await waitFor(() => reports.find((r) => r.kind === "started" && r.token === cmd.token));
    const taskPid = await waitFor(() => readPid(pidFile));
    const victim = pool.stats().find((s) => s.running === 1)!;
    const survivor = pool.stats().find((s) => s.running === 0)!;

    const t0 = Date.now();
    process.kill(victim.pid!, "SIGKILL");
    const lost = (await waitFor(() => terminal(cmd.token), 1000)) as FailedReport;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(lost).toMatchObject({ kind: "failed", token: cmd.token, attempt: 1, workerId: victim.workerId });
    expect(lost.error).toEqual({
      kind: "lost",
      message: `worker ${victim.workerId} (pid ${victim.pid}) exited with signal SIGKILL`,
    });

    // The task's process group dies with its worker: nothing runs unsupervised.
    await waitFor(() => !isAlive(taskPid), 2000);

    await waitFor(() => pool.workerCount === 2 && pool.stats().every((s) => s.ready), 5000);
    const ids = pool.stats().map((s) => s.workerId);
    expect(ids).toContain(survivor.workerId);
    expect(ids).not.toContain(victim.workerId);
    pool.dispatch([runCmd({ type: "noop" }, { token: "after-loss" })]);
    expect((await waitFor(() => terminal("after-loss"))).kind).toBe("succeeded");
  });

  it("kills a node task's process with its SIGKILLed worker, even one that never yields", async () => {
    const { pool, reports, terminal } = newPool(1);
    await pool.ready();
    const dir = await tempDir();
    const pidFile = join(dir, "node.pid");
    const mod = join(dir, "spin.mjs");
    await writeFile(
      mod,
      `import { writeFileSync } from "node:fs";\nexport default () => { writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); for (;;) {} };\n`,
    );
    pool.dispatch([runCmd({ type: "node", module: mod }, { token: "node-spin" })]);
    await waitFor(() => reports.find((r) => r.kind === "started" && r.token === "node-spin"));
    const taskPid = await waitFor(() => readPid(pidFile), 5000);
    const worker = pool.stats()[0]!;
    expect(taskPid).not.toBe(worker.pid);
    process.kill(worker.pid!, "SIGKILL");
    expect(await waitFor(() => terminal("node-spin"), 2000)).toMatchObject({
      kind: "failed",
      error: { kind: "lost" },
    });
    await waitFor(() => !isAlive(taskPid), 2000);
  });

  it("killAll kills every worker and what it runs at once, reports each attempt lost, and starts new workers", async () => {
    const { pool, reports, terminal } = newPool(2);
    await pool.ready();
    const dir = await tempDir();
    const cmds = ["a", "b", "c"].map((t) =>
      runCmd(shell(`echo $$ > ${join(dir, `${t}.pid`)}; exec sleep 30`), { token: `kill-${t}` }),
    );
    const gated = runCmd(shell("echo ran"), { token: "kill-gated", awaitProceed: true });
    pool.dispatch([...cmds, gated]);
    for (const t of ["a", "b", "c"]) await waitFor(() => readPid(join(dir, `${t}.pid`)));
    await waitFor(() => reports.find((r) => r.kind === "started" && r.token === gated.token));
    const taskPids = ["a", "b", "c"].map((t) => readPid(join(dir, `${t}.pid`)) as number);
    const before = pool.stats();

    const t0 = Date.now();
    expect(pool.killAll("scheduler s1 was fenced")).toBe(4);
    for (const c of [...cmds, gated]) {
      const lost = (await waitFor(() => terminal(c.token), 1000)) as FailedReport;
      expect(lost.error.kind).toBe("lost");
      expect(lost.error.message).toMatch(/^scheduler s1 was fenced: worker .+ \(pid \d+\) was killed$/);
    }
    expect(Date.now() - t0).toBeLessThan(1000);
    // Nothing runs on: the tasks died with their workers, and the gated one never ran.
    for (const pid of taskPids) await waitFor(() => !isAlive(pid), 2000);
    expect(pool.proceed(gated.token)).toBe(false);
    expect(reports.some((r) => r.kind === "succeeded")).toBe(false);

    await waitFor(() => pool.workerCount === 2 && pool.stats().every((s) => s.ready), 5000);
    const ids = pool.stats().map((s) => s.workerId);
    for (const w of before) expect(ids).not.toContain(w.workerId);
    pool.dispatch([runCmd({ type: "noop" }, { token: "after-kill" })]);
    expect((await waitFor(() => terminal("after-kill"))).kind).toBe("succeeded");
  });

  it("refuses a number of started shells that is not a whole number", () => {
    expect(() => new WorkerPool({ size: 1, warmShells: -1, workerModule: workerMain })).toThrow(
      "warmShells must be a non-negative integer, got -1",
    );
  });

  it("keeps shells started ahead of need in each worker, which die with it", async () => {
    const { pool, terminal } = newPool(1);
    await pool.ready();
    const workerPid = pool.stats()[0]?.pid as number;
    const idle = await waitFor(() => {
      const c = childrenOf(workerPid);
      return c.length === 2 ? c : undefined;
    });
    pool.dispatch([runCmd(shell("echo $$"), { token: "warm-in-worker" })]);
    const done = await waitFor(() => terminal("warm-in-worker"));
    expect(done.kind).toBe("succeeded");
    expect(idle).toContain(Number(done.stdoutTail.trim()));

    const groups = await waitFor(() => {
      const c = childrenOf(workerPid);
      return c.length === 2 ? c : undefined;
    });
    process.kill(workerPid, "SIGKILL");
    // Each idle shell reads end-of-file and its watchdog fires: no process of theirs is left.
    await waitFor(() => groups.every((g) => processGroup(g).length === 0), 2000);
  });

  it("close shuts every worker down and refuses more work", async () => {
    const { pool, terminal } = newPool(2);
    await pool.ready();
    const pids = pool.stats().map((s) => s.pid!);
    pool.dispatch([runCmd(shell("sleep 0.2"), { token: "pool-close" })]);
    await sleep(50);
    await pool.close(5000);
    expect(terminal("pool-close")?.kind).toBe("succeeded");
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(() => pool.dispatch([runCmd({ type: "noop" })])).toThrow(/closed/);
  });

  it("carries many attempts through forked workers in few IPC batches", async () => {
    const { pool, reports } = newPool(2);
    await pool.ready();
    const batches: number[] = [];
    pool.onReports((rs) => batches.push(rs.length));
    const t0 = performance.now();
    pool.dispatch(Array.from({ length: 5000 }, (_, i) => runCmd({ type: "noop" }, { token: `bulk-${i}` })));
    await waitFor(() => reports.filter((r) => r.kind === "succeeded").length === 5000, 10_000);
    console.log(
      `5,000 noop attempts through a 2-worker pool: ${(performance.now() - t0).toFixed(0)} ms, ${batches.length} report batches`,
    );
    expect(batches.length).toBeLessThan(100);
  });
});

describe("worker process (main.js)", () => {
  it("announces ready, runs commands, and kills its tasks and exits when the coordinator goes away", async () => {
    const dir = await tempDir();
    const pidFile = join(dir, "task.pid");
    const child = fork(workerMain, [], {
      env: { ...process.env, CHRONOLOG_WORKER_ID: "solo", CHRONOLOG_WORKER_CAPACITY: "3" },
      execArgv: [],
      serialization: "advanced",
    });
    const reports: WorkerReport[] = [];
    child.on("message", (b: Batch<WorkerReport>) => reports.push(...b.messages));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const ready = await waitFor(() => reports.find((r) => r.kind === "ready"));
    expect(ready).toEqual({ kind: "ready", workerId: "solo", pid: child.pid, capacity: 3 });

    child.send({
      kind: "batch",
      messages: [runCmd(shell(`echo $$ > ${pidFile}; exec sleep 30`), { token: "orphan" })],
    });
    await waitFor(() => reports.find((r) => r.kind === "started"));
    const taskPid = await waitFor(() => readPid(pidFile));
    expect(isAlive(taskPid)).toBe(true);

    child.disconnect();
    expect(await exited).toBe(0);
    await waitFor(() => !isAlive(taskPid), 2000);
  });
});
