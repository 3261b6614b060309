import type { DisconnectedWorker, SchedulerProjection, WorkerAttempt, WorkerRecord } from "@chronolog/core";

/**
 * Remote workers as `chronolog workers` and `GET /api/v1/workers` list them, from the projection
 * alone: the CLI folds the log, the API its own projection.
 */

/** An attempt a worker runs now. */
export interface WorkerAttemptRow {
  readonly task: string;
  /** The interval it runs (its logical date). */
  readonly logicalDate: string;
  readonly attempt: number;
  readonly queue: string | null;
  readonly startedAt: string | null;
}

/** A connected worker, its load and what it runs. */
export interface WorkerRow {
  readonly id: string;
  readonly host: string;
  readonly queues: readonly string[];
  readonly capacity: number;
  /** Attempts it runs now (started on it and not ended). */
  readonly busy: number;
  readonly version: string;
  readonly scheduler: string | null;
  /** The name of the token it connected with. */
  readonly token: string | null;
  /** When it connected. */
  readonly since: string;
  /** When the log last heard of it (its connection, or an attempt's start, heartbeat or report). */
  readonly lastHeard: string;
  /** What it runs, but for the attempts of projects the reader may not read. */
  readonly running: readonly WorkerAttemptRow[];
  /** Attempts it runs that the reader may not see (of other projects). */
  readonly hidden: number;
}

/** A worker gone recently, and why. */
export interface DisconnectedWorkerRow extends Omit<WorkerRow, "busy" | "lastHeard" | "running" | "hidden"> {
  /** When it went. */
  readonly until: string;
  readonly reason: string;
}

export interface WorkerListing {
  readonly connected: readonly WorkerRow[];
  /** Recently gone, the latest first (only when asked for). */
  readonly disconnected?: readonly DisconnectedWorkerRow[];
}

/** The project of a task id (`project/account/name/partition`). */
const projectOf = (task: string): string => task.slice(0, task.indexOf("/"));

function recordRow(w: WorkerRecord): Omit<WorkerRow, "busy" | "lastHeard" | "running" | "hidden"> {
  return {
    id: w.id,
    host: w.host,
    queues: w.queues,
    capacity: w.capacity,
    version: w.version,
    scheduler: w.scheduler ?? null,
    token: w.token ?? null,
    since: w.since,
  };
}

function attemptRow(a: WorkerAttempt): WorkerAttemptRow {
  return {
    task: a.task,
    logicalDate: a.logicalDate,
    attempt: a.attempt,
    queue: a.queue ?? null,
    startedAt: a.startedAt ?? null,
  };
}

/**
 * The workers connected (by id) and, with `all`, those gone recently. `canReadProject`: whether
 * the reader may read a project; a worker is listed whatever it runs, its attempts of projects
 * the reader may not read are only counted.
 */
export function workerListing(
  projection: Pick<SchedulerProjection, "workers">,
  options: { readonly all?: boolean; readonly canReadProject?: (project: string) => boolean } = {},
): WorkerListing {
  const may = options.canReadProject ?? (() => true);
  const connected = projection.workers.connected().map((w): WorkerRow => {
    const shown = w.running.filter((a) => may(projectOf(a.task)));
    return {
      ...recordRow(w),
      busy: w.running.length,
      lastHeard: w.lastHeard,
      running: shown.map(attemptRow),
      hidden: w.running.length - shown.length,
    };
  });
  if (!options.all) return { connected };
  const disconnected = projection.workers.disconnected().map(
    (w: DisconnectedWorker): DisconnectedWorkerRow => ({
      ...recordRow(w),
      until: w.until,
      reason: w.reason,
    }),
  );
  return { connected, disconnected };
}
