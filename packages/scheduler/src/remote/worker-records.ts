import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import {
  answerHeldAttempt,
  currentAttempt,
  type HeldAttemptAnswer,
  type InstanceState,
  type SchedulerProjection,
  workerStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import type { AttemptReport, FailedReport, RunCommand } from "@chronolog/worker";
import type { RemoteConnection } from "./connection.js";
import type { OutputSink } from "./output-sink.js";

export { WORKER_ID } from "./refusal.js";

import { WORKER_ID } from "./refusal.js";

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
 * connected to an earlier process (not `self`), naming that process; returns how many.
 */
export async function closeLeftConnections(
  log: EventLog,
  ids: readonly string[],
  self: string,
): Promise<number> {
  let n = 0;
  for (const id of ids) {
    const stream = workerStream(id);
    const rev = await log.streamRevision(stream);
    if (rev === "no_stream") continue;
    const [last] = await log.readStream(stream, { fromRevision: rev, maxCount: 1 });
    if (last?.type !== "WorkerConnected") continue;
    const scheduler = (last.data as { scheduler?: string }).scheduler;
    // Already registered again with this process: that registration is not left over.
    if (scheduler === self) continue;
    await log.append(
      stream,
      [
        {
          type: "WorkerDisconnected",
          data: { worker: id, reason: "scheduler restarted", ...(scheduler ? { scheduler } : {}) },
        },
      ],
      { expectedRevision: rev },
    );
    n += 1;
  }
  return n;
}

/**
 * Of `tokens`, those of current attempts a remote worker may hold (of a task with a queue, or
 * started on a remote worker: those the workers projection follows), each with its status.
 * A look-up or two per token, whatever the number of instances held.
 */
export function currentAttempts(
  projection: SchedulerProjection,
  tokens: Iterable<string>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const token of tokens) {
    const followed = projection.workers.attempt(token);
    const inst = followed ? projection.instances.get(followed.stream) : undefined;
    const a = inst ? currentAttempt(inst) : undefined;
    if (inst && a?.token === token && isCurrent(inst)) out.set(token, a.status);
  }
  return out;
}

/** What the worker holding attempt `token` (in flight on a queue) is told: see answerHeldAttempt. */
export function heldAnswer(projection: SchedulerProjection, token: string): HeldAttemptAnswer {
  const stream = projection.workers.attempt(token)?.stream;
  return answerHeldAttempt(stream === undefined ? undefined : projection.instances.get(stream), token);
}

/** Of `tokens`, those of current attempts (queued, running or lease-expired). */
export function currentTokens(projection: SchedulerProjection, tokens: Iterable<string>): Set<string> {
  return new Set(currentAttempts(projection, tokens).keys());
}

/** Whether the instance's current attempt may still report: queued, running or lease-expired. */
export function isCurrent(inst: InstanceState): boolean {
  const s = currentAttempt(inst)?.status;
  return s === "queued" || s === "running" || s === "lease_expired";
}

/**
 * The ends of what a worker saying goodbye was given (or adopted from an earlier process) and
 * never started (no start on record): it starts nothing more, so each ends now, interrupted, to
 * run again at once elsewhere (not after a lease). Safe however it stands with the worker: a task
 * that is not idempotent starts only once its start is recorded, and an idempotent one may run
 * twice.
 */
export function unstartedEnds(
  projection: SchedulerProjection,
  conn: Pick<RemoteConnection, "id" | "given">,
  now: number,
): FailedReport[] {
  const out: FailedReport[] = [];
  for (const [token, cmd] of conn.given) {
    // Given by this process (its command), or adopted from an earlier one (its stream followed).
    const stream = cmd?.instanceStream ?? projection.workers.attempt(token)?.stream;
    const inst = stream === undefined ? undefined : projection.instances.get(stream);
    const a = inst ? currentAttempt(inst) : undefined;
    if (!inst || a?.token !== token || a.status !== "queued") continue;
    out.push(
      unstartedEnd(
        { token, attempt: a.attempt, instanceStream: inst.stream },
        conn.id,
        { kind: "interrupted", message: `worker ${conn.id} stopped before starting it` },
        now,
      ),
    );
  }
  return out;
}

/** The failed report of an attempt that never started: in no worker's hands, or never begun by one. */
function unstartedEnd(
  cmd: Pick<RunCommand, "token" | "attempt" | "instanceStream">,
  workerId: string,
  error: FailedReport["error"],
  now: number,
): FailedReport {
  return {
    kind: "failed",
    token: cmd.token,
    attempt: cmd.attempt,
    instanceStream: cmd.instanceStream,
    workerId,
    neverStarted: true,
    at: new Date(now).toISOString(),
    durationMs: 0,
    exitCode: null,
    stdoutTail: "",
    stderrTail: "",
    error,
  };
}

/** The failed report of an attempt cancelled before any worker had it. */
export function cancelled(cmd: RunCommand, reason: string, now: number): FailedReport {
  return unstartedEnd(cmd, `queue:${cmd.queue}`, { kind: "exception", message: `cancelled: ${reason}` }, now);
}

/** Why a report of a worker that holds its attempt is refused (not current), or undefined. */
export function staleReport(projection: SchedulerProjection, r: AttemptReport): string | undefined {
  const inst = projection.instances.get(r.instanceStream);
  const a = inst ? currentAttempt(inst) : undefined;
  if (!a || a.token !== r.token || a.attempt !== r.attempt)
    return `attempt ${r.token} is not the current attempt of ${r.instanceStream}`;
  if (a.status !== "queued" && a.status !== "running" && a.status !== "lease_expired")
    return `attempt ${r.attempt} of ${r.instanceStream} already ended (${a.status})`;
  return undefined;
}

/**
 * Records gone (on their workers' streams) the registrations the log still shows with a
 * scheduler other than `self` that `isGone` says is gone: a killed scheduler records nothing.
 * `closing` holds those recorded or being recorded (by this process). Returns how many it recorded.
 */
export async function closeGoneRegistrations(
  log: EventLog,
  projection: SchedulerProjection,
  self: string,
  isGone: (schedulerId: string) => boolean,
  closing: Set<string>,
  notBefore: number,
): Promise<number> {
  let n = 0;
  for (const { worker, scheduler, since } of projection.workers.connections()) {
    const key = `${worker} ${scheduler}`;
    // A registration newer than `notBefore` may be of a scheduler the member list has not shown yet.
    if (scheduler === self || Date.parse(since) > notBefore || !isGone(scheduler) || closing.has(key))
      continue;
    closing.add(key);
    try {
      await log.append(
        workerStream(worker),
        [
          {
            type: "WorkerDisconnected",
            data: { worker, scheduler, reason: `scheduler ${scheduler} is gone` },
          },
        ],
        { expectedRevision: "any" },
      );
      n += 1;
    } catch (error) {
      // Tried again at the next call; recorded ones stay in `closing` (a gone scheduler's id never returns).
      closing.delete(key);
      throw error;
    }
  }
  return n;
}

/**
 * Attempts ended in the log that connections still count (adopted by one, their end reported to
 * another scheduler that applied it) are forgotten: they free slots. Returns the queues freed.
 */
export function pruneEnded(
  projection: SchedulerProjection,
  conns: Iterable<RemoteConnection>,
  owner: Map<string, RemoteConnection>,
): Set<string> {
  const freed = new Set<string>();
  for (const c of conns) {
    if (c.given.size === 0) continue;
    const current = currentTokens(projection, c.given.keys());
    for (const t of [...c.given.keys()]) {
      if (current.has(t)) continue;
      c.given.delete(t);
      c.spokenOf.delete(t);
      if (owner.get(t) === c) owner.delete(t);
      for (const q of c.queues) freed.add(q);
    }
  }
  return freed;
}

/** The report as the scheduler applies it: the worker's id and actor, the output where it is kept here. */
export function settleReport(conn: RemoteConnection, r: AttemptReport, output: OutputSink): AttemptReport {
  const base = { workerId: conn.id, actor: conn.actor };
  switch (r.kind) {
    case "started":
      return {
        ...r,
        ...base,
        ...(r.outputPath !== undefined ? { outputPath: output.pathOf(r.token) } : {}),
      };
    case "heartbeat":
      return { ...r, ...base };
    case "succeeded":
    case "failed": {
      // (Its inline output is in the file by now: the report goes on without it.)
      const { outputRest: _, ...end } = r;
      return {
        ...end,
        ...base,
        ...(r.outputFile ? { outputFile: output.settle(r.token, r.outputFile) } : {}),
      };
    }
  }
}
