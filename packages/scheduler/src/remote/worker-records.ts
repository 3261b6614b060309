import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { currentAttempt, type InstanceState, type SchedulerProjection, workerStream } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import type { FailedReport, RefusedReport, RunCommand, WorkerReport } from "@chronolog/worker";

export const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/**
 * The ids of the remote workers connected to this scheduler, kept in a file of its data
 * directory, so that the next process can record them gone (a killed one closes nothing).
 * No file while none is connected.
 */
export class ConnectedFile {
  constructor(private readonly path: string) {}

  read(): string[] {
    try {
      const ids = JSON.parse(readFileSync(this.path, "utf8")).connected;
      return Array.isArray(ids)
        ? ids.filter((x): x is string => typeof x === "string" && WORKER_ID.test(x))
        : [];
    } catch {
      return [];
    }
  }

  write(ids: readonly string[]): void {
    if (ids.length === 0) {
      rmSync(this.path, { force: true });
      return;
    }
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify({ connected: ids }), { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}

/**
 * Records gone (`scheduler restarted`) each of these workers whose stream still says it is
 * connected; returns how many.
 */
export async function closeLeftConnections(log: EventLog, ids: readonly string[]): Promise<number> {
  let n = 0;
  for (const id of ids) {
    const stream = workerStream(id);
    const rev = await log.streamRevision(stream);
    if (rev === "no_stream") continue;
    const [last] = await log.readStream(stream, { fromRevision: rev, maxCount: 1 });
    if (last?.type !== "WorkerConnected") continue;
    await log.append(
      stream,
      [{ type: "WorkerDisconnected", data: { worker: id, reason: "scheduler restarted" } }],
      { expectedRevision: rev },
    );
    n += 1;
  }
  return n;
}

/** Refused reports on record, on the worker's stream (at most 100 of one batch). */
export async function recordRefused(
  log: EventLog,
  worker: string,
  messages: readonly WorkerReport[],
  refused: readonly RefusedReport[],
): Promise<void> {
  const streams = new Map<string, string>();
  for (const m of messages) if ("instanceStream" in m) streams.set(m.token, m.instanceStream);
  const events = refused.slice(0, 100).map((r) => {
    const stream = streams.get(r.token);
    return {
      type: "WorkerReportRefused" as const,
      data: {
        worker,
        kind: r.kind.slice(0, 32),
        token: r.token.slice(0, 256),
        ...(stream ? { instanceStream: stream.slice(0, 1024) } : {}),
        reason: r.reason,
      },
    };
  });
  await log.append(workerStream(worker), events, { expectedRevision: "any" });
}

/** Of `tokens`, those of current attempts, each with its attempt's status. */
export function currentAttempts(
  projection: SchedulerProjection,
  tokens: readonly string[],
): Map<string, string> {
  const out = new Map<string, string>();
  if (tokens.length === 0) return out;
  const wanted = new Set(tokens);
  for (const inst of projection.instances.values()) {
    const a = currentAttempt(inst);
    if (a && wanted.has(a.token) && isCurrent(inst)) out.set(a.token, a.status);
  }
  return out;
}

/** Whether the instance's current attempt may still report: queued, running or lease-expired. */
export function isCurrent(inst: InstanceState): boolean {
  const s = currentAttempt(inst)?.status;
  return s === "queued" || s === "running" || s === "lease_expired";
}

/** The failed report of an attempt cancelled before any worker had it. */
export function cancelled(cmd: RunCommand, reason: string, now: number): FailedReport {
  return {
    kind: "failed",
    token: cmd.token,
    attempt: cmd.attempt,
    instanceStream: cmd.instanceStream,
    workerId: `queue:${cmd.queue}`,
    at: new Date(now).toISOString(),
    durationMs: 0,
    exitCode: null,
    stdoutTail: "",
    stderrTail: "",
    error: { kind: "exception", message: `cancelled: ${reason}` },
  };
}
