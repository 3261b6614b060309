/**
 * The worker process. The coordinator forks it (see WorkerPool) and talks to it over the IPC
 * channel in batches: WorkerCommand in, WorkerReport out.
 *
 * Environment: CHRONOLOG_WORKER_ID (default `worker-<pid>`), CHRONOLOG_WORKER_CAPACITY (default
 * 64), CHRONOLOG_STAGING_ROOT (staged outputs off when unset), CHRONOLOG_OUTPUT_ROOT (where each
 * attempt's output is kept in a file; off when unset), CHRONOLOG_OUTPUT_MAX_BYTES (the most one such
 * file keeps, default 1 MiB), CHRONOLOG_TASK_IDENTITY (`uid:gid` tasks run as; default the worker's own),
 * CHRONOLOG_WORK_ROOT (where each attempt gets its working directory; none when unset),
 * CHRONOLOG_TASK_PASS_ENV (comma-separated names of variables tasks get beyond the allowlist),
 * CHRONOLOG_TASK_UMASK (octal, the umask tasks start with), CHRONOLOG_WARM_SHELLS (shells kept
 * started ahead of need for shell tasks, default 2), CHRONOLOG_FAULT (fault injection for the
 * black-box fault tests, see faults.ts; off when unset).
 */
import { faultsFromEnv } from "./faults.js";
import { setWarmShells } from "./operators/shell.js";
import { DEFAULT_OUTPUT_MAX_BYTES } from "./output-file.js";
import type { Batch, WorkerCommand, WorkerReport } from "./protocol.js";
import { WorkerRuntime } from "./runtime.js";
import { configureTasks } from "./sandbox.js";

const DEFAULT_CAPACITY = 64;
const DEFAULT_WARM_SHELLS = 2;

/** An integer setting of at least `min` (0 or 1) from the environment, `fallback` when unset. */
function intFromEnv(name: string, fallback: number, min: 0 | 1): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`${name} must be a ${min === 0 ? "non-negative" : "positive"} integer: ${raw}`);
  return n;
}

/** `uid:gid` from CHRONOLOG_TASK_IDENTITY, or undefined when unset. */
function identityFromEnv(): { uid: number; gid: number } | undefined {
  const raw = process.env.CHRONOLOG_TASK_IDENTITY;
  if (raw === undefined || raw === "") return undefined;
  const m = /^(\d+):(\d+)$/.exec(raw);
  if (!m) throw new Error(`CHRONOLOG_TASK_IDENTITY must be uid:gid, got ${raw}`);
  return { uid: Number(m[1]), gid: Number(m[2]) };
}

function sendOverIpc(batch: Batch<WorkerReport>): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    // The callback runs once the message is handed to the channel, or with an error if it closed.
    process.send(batch, undefined, undefined, () => resolve());
  });
}

function isCommand(m: unknown): m is WorkerCommand {
  const kind = (m as { kind?: unknown } | null)?.kind;
  return kind === "run" || kind === "proceed" || kind === "query" || kind === "cancel" || kind === "shutdown";
}

function start(): void {
  const workerId = process.env.CHRONOLOG_WORKER_ID || `worker-${process.pid}`;
  const capacity = intFromEnv("CHRONOLOG_WORKER_CAPACITY", DEFAULT_CAPACITY, 1);
  const warmShells = intFromEnv("CHRONOLOG_WARM_SHELLS", DEFAULT_WARM_SHELLS, 0);
  const stagingRoot = process.env.CHRONOLOG_STAGING_ROOT || undefined;
  const outputRoot = process.env.CHRONOLOG_OUTPUT_ROOT || undefined;
  const outputMaxBytes = intFromEnv("CHRONOLOG_OUTPUT_MAX_BYTES", DEFAULT_OUTPUT_MAX_BYTES, 0);
  const faults = faultsFromEnv(process.env);
  const identity = identityFromEnv();
  const workRoot = process.env.CHRONOLOG_WORK_ROOT || undefined;
  const passEnv = (process.env.CHRONOLOG_TASK_PASS_ENV ?? "").split(",").filter((n) => n !== "");
  configureTasks({ ...(identity ? { identity } : {}), ...(workRoot ? { workRoot } : {}), passEnv });
  const umask = process.env.CHRONOLOG_TASK_UMASK;
  if (umask !== undefined && umask !== "") {
    if (!/^[0-7]{1,4}$/.test(umask)) throw new Error(`CHRONOLOG_TASK_UMASK must be octal, got ${umask}`);
    // The worker's own files (output files) are created with explicit modes.
    process.umask(Number.parseInt(umask, 8));
  }
  const runtime = new WorkerRuntime({
    workerId,
    capacity,
    stagingRoot,
    outputRoot,
    outputMaxBytes,
    faults,
    send: sendOverIpc,
  });

  process.on("message", (msg: unknown) => {
    if ((msg as Batch<unknown> | null)?.kind === "batch") {
      const messages = (msg as Batch<unknown>).messages;
      runtime.handle({ kind: "batch", messages: messages.filter(isCommand) });
    } else if (isCommand(msg)) {
      runtime.handleCommand(msg);
    }
  });

  // The coordinator is gone (it crashed or was killed). Kill every running task rather than let
  // it run unsupervised, even a non-idempotent one: nobody could receive its result, the attempt's
  // lease will expire, and the next coordinator's reconcile loop decides what happens to it
  // (re-dispatch if idempotent, otherwise wait or flag it). Letting it run on would allow a
  // second, concurrent execution once the attempt is re-dispatched, which is worse than an
  // interrupted one; staged outputs make an interrupted attempt leave nothing at its target.
  process.on("disconnect", () => {
    void runtime.shutdown(0);
    runtime.killAll("coordinator disconnected");
  });
  // SIGTERM sent to this process alone: stop now, the same way.
  process.on("SIGTERM", () => {
    void runtime.shutdown(0);
    runtime.killAll("worker received SIGTERM");
  });
  // Ctrl-C reaches the whole foreground process group: leave the decision to the coordinator,
  // which sends `shutdown` with its grace (or dies, which disconnects the channel).
  process.on("SIGINT", () => {});
  // A node task's stray promise must not take down every other attempt of this worker.
  process.on("unhandledRejection", (err) =>
    console.error(`chronolog worker ${workerId}: unhandled rejection`, err),
  );

  void runtime.closed.then(() => {
    if (process.connected) process.disconnect();
    process.exit(0);
  });
  setWarmShells(warmShells);
  runtime.report({ kind: "ready", workerId, pid: process.pid, capacity });
}

if (typeof process.send === "function") start();
