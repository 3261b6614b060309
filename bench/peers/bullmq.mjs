// BullMQ on its own redis-server, durable (AOF, fsync on every write) or in memory only (no
// persistence at all), on the same work as bench/scheduler: N independent no-op jobs, and a
// chain whose next step is added when the previous one completes. Started and stopped here, on
// a free loopback port.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Queue, Worker } from "bullmq";
import IORedis from "ioredis";
import { percentile } from "../table.mjs";

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * A redis-server of its own, never saving RDB snapshots: with `durable`, every write in an
 * append-only file fsynced before it is answered; without, nothing written to disk at all.
 */
export async function startRedis({ durable = true } = {}) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-redis-"));
  const port = await freePort();
  const proc = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      ...(durable ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]),
      "--save",
      "",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  proc.stdout.on("data", (d) => {
    out += d;
  });
  const deadline = Date.now() + 10_000;
  while (!out.includes("Ready to accept connections")) {
    if (proc.exitCode !== null || Date.now() > deadline)
      throw new Error(`redis-server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const clients = [];
  return {
    /** A new client (BullMQ takes one per queue and per worker, its blocking reads on its own). */
    get connection() {
      const c = new IORedis({ host: "127.0.0.1", port, maxRetriesPerRequest: null });
      clients.push(c);
      return c;
    },
    async stop() {
      for (const c of clients) c.disconnect();
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** N independent no-op jobs: addBulk, one worker at concurrency 50; jobs/s until all completed. */
export async function bullmqIndependent(redis, n) {
  const name = `independent-${Date.now()}`;
  const queue = new Queue(name, { connection: redis.connection });
  let done = 0;
  let finished;
  const all = new Promise((r) => {
    finished = r;
  });
  const worker = new Worker(name, async () => {}, {
    connection: redis.connection,
    concurrency: 50,
    autorun: false,
  });
  worker.on("completed", () => {
    done += 1;
    if (done === n) finished();
  });
  const t0 = performance.now();
  for (let i = 0; i < n; i += 1000)
    await queue.addBulk(
      Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ name: "noop", data: { i: i + j } })),
    );
  void worker.run();
  await all;
  const secs = (performance.now() - t0) / 1000;
  await worker.close();
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  return { n, secs, rate: n / secs };
}

/** A chain of n steps: each step is added when the previous completes; the hop is completed -> next step's start. */
export async function bullmqChain(redis, n) {
  const name = `chain-${Date.now()}`;
  const queue = new Queue(name, { connection: redis.connection });
  const completedAt = new Map();
  const startedAt = new Map();
  let finished;
  const all = new Promise((r) => {
    finished = r;
  });
  const worker = new Worker(
    name,
    async (job) => {
      startedAt.set(job.data.step, performance.now());
    },
    { connection: redis.connection, concurrency: 50 },
  );
  worker.on("completed", (job) => {
    const step = job.data.step;
    completedAt.set(step, performance.now());
    if (step + 1 < n) void queue.add("step", { step: step + 1 });
    else finished();
  });
  const t0 = performance.now();
  await queue.add("step", { step: 0 });
  await all;
  const wall = performance.now() - t0;
  const hops = [];
  for (let i = 1; i < n; i++) hops.push(startedAt.get(i) - completedAt.get(i - 1));
  hops.sort((a, b) => a - b);
  await worker.close();
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  return { n, p50: percentile(hops, 50), p99: percentile(hops, 99), wall };
}
