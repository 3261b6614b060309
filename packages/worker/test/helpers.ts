import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Batch, FailedReport, RunCommand, SucceededReport, WorkerReport } from "../src/protocol.js";
import { WorkerRuntime, type WorkerRuntimeOptions } from "../src/runtime.js";

export const LOGICAL_DATE = "2026-11-28T02:00:00.000Z";
let seq = 0;

export function runCmd(operator: Record<string, unknown>, over: Partial<RunCommand> = {}): RunCommand {
  const token = over.token ?? `tok-${process.pid}-${++seq}`;
  return {
    kind: "run",
    instanceStream: `instance-sales/acme/orders/ALL@${LOGICAL_DATE}`,
    taskKey: "sales/acme/orders/ALL",
    logicalDate: LOGICAL_DATE,
    attempt: 1,
    token,
    operator,
    leaseSeconds: 30,
    ...over,
  };
}

export const shell = (command: string, extra: Record<string, unknown> = {}) => ({
  type: "shell",
  command,
  env: {},
  ...extra,
});

export const ctxFor = (signal: AbortSignal = new AbortController().signal) => ({
  token: "tok-ctx",
  attempt: 2,
  logicalDate: LOGICAL_DATE,
  taskKey: "sales/acme/orders/ALL",
  signal,
});

/** A WorkerRuntime whose sends are recorded. */
export function harness(opts: Partial<WorkerRuntimeOptions> = {}) {
  const batches: Batch<WorkerReport>[] = [];
  const reports: WorkerReport[] = [];
  const runtime = new WorkerRuntime({
    workerId: "w-test",
    capacity: 4,
    send: (b) => {
      batches.push(b);
      reports.push(...b.messages);
    },
    ...opts,
  });
  const ofToken = (token: string) => reports.filter((r) => "token" in r && r.token === token);
  const terminal = (token: string) =>
    reports.find(
      (r): r is SucceededReport | FailedReport =>
        (r.kind === "succeeded" || r.kind === "failed") && r.token === token,
    );
  const finished = (token: string) => waitFor(() => terminal(token), 10_000);
  return { runtime, batches, reports, ofToken, terminal, finished };
}

export async function waitFor<T>(probe: () => T | undefined | null | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waitFor: condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether a process exists and is not a zombie (PID 1 of a container may never reap orphans). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

export const tempDir = (prefix = "chronolog-worker-") => mkdtemp(join(tmpdir(), prefix));

export function readPid(file: string): number | undefined {
  try {
    const n = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Every live process's pid, parent and process group, read from /proc. */
function processes(): Array<{ pid: number; ppid: number; pgrp: number }> {
  const out: Array<{ pid: number; ppid: number; pgrp: number }> = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state !== "Z" && state !== "X")
        out.push({ pid: Number(entry), ppid: Number(ppid), pgrp: Number(pgrp) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The live processes of a process group. */
export function processGroup(pgid: number): number[] {
  return processes()
    .filter((p) => p.pgrp === pgid)
    .map((p) => p.pid);
}

/** The live children of a process. */
export function childrenOf(ppid: number): number[] {
  return processes()
    .filter((p) => p.ppid === ppid)
    .map((p) => p.pid);
}

/**
 * What a scheduler spoken by hand answers a worker's registration (session `s1`): keepalives
 * and silences long enough that the test decides every exchange; `extra` adds fields (`now`).
 */
export function registrationAnswer(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    protocol: 1,
    session: "s1",
    actor: "worker:w@h",
    adopted: [],
    stop: [],
    keepaliveMs: 60_000,
    silenceMs: 600_000,
    outputMaxBytes: 1024,
    maxOutputChunk: 1024,
    maxReportBatch: 100,
    ...extra,
  });
}
