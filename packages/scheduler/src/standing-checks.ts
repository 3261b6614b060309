import { formatTaskKey, instanceStream, type SchedulerProjection, type TaskKey } from "@chronolog/core";
import type { EventLog, StreamCheck } from "@chronolog/log";

/** A write as an operation plans it: a stream and the events for it. */
interface PlannedWrite {
  readonly streamId: string;
  readonly events: ReadonlyArray<{ readonly type: string; readonly data?: unknown }>;
}

/**
 * What an operation that moves tasks (a backfill, its cancel, a rerun, a trigger, a declaration
 * that moves a task to its new schedule, the scheduler's own jump of a task with catch-up off)
 * decided on besides the task streams it writes: that no attempt was under way at the interval each moved
 * task stood at. Its task stream's compare-and-set does not cover that, since a dispatch writes
 * only the interval's attempt stream, and the scheduler (another process, often) dispatches
 * whenever it likes. So each of those attempt streams is checked at its revision as of the
 * projection the operation was decided on: a dispatch written since refuses the write, which
 * is then decided again on the log as it is (and finds the interval under way). The scheduler
 * checks the other way round: its intent is refused when the task moved since it decided.
 *
 * A task whose walk goes on where it stands (`continues`: its attempt there counts) is not
 * checked, nor a stream the operation writes itself (a run's interval it closes: its own
 * compare-and-set, at its revision as of the same position, covers it).
 *
 * Called in the same turn as the decision, on the projection it was made on: what it reads of
 * the projection (its position, where each task stands) it reads before its first wait, so a
 * projection that moves on meanwhile (the scheduler's own, which the HTTP API decides on) does
 * not change what is checked.
 */
export async function standingChecks(
  log: EventLog,
  projection: SchedulerProjection,
  writes: readonly PlannedWrite[],
): Promise<StreamCheck[]> {
  const written = new Set(writes.map((w) => w.streamId));
  const streams = new Set<string>();
  for (const w of writes)
    for (const e of w.events) {
      if (e.type !== "IntervalReset") continue;
      const d = e.data as { key: TaskKey; logicalDate: string; continues?: boolean };
      const task = projection.tasks.get(formatTaskKey(d.key));
      if (!task || (d.continues === true && d.logicalDate === task.logicalDate)) continue;
      const stream = instanceStream(task.key, task.logicalDate);
      if (!written.has(stream)) streams.add(stream);
    }
  const at = projection.position;
  return Promise.all(
    [...streams].map(async (streamId) => ({
      streamId,
      expectedRevision: await revisionAsOf(log, streamId, at),
    })),
  );
}

/** The stream's revision once the log's events up to `position` are applied (none: no_stream). */
async function revisionAsOf(
  log: EventLog,
  streamId: string,
  position: bigint,
): Promise<bigint | "no_stream"> {
  let revision: bigint | "no_stream" = "no_stream";
  for (const e of await log.readStream(streamId)) if (e.position <= position) revision = e.revision;
  return revision;
}

/**
 * An attempt stream's revision as `projection` saw it, for a write that closes its interval:
 * its instance's when the projection holds one, else (an interval it no longer holds, an old
 * date) the log's as of the projection's position. What it reads of the projection it reads at
 * once, in the caller's turn.
 */
export function heldRevision(
  log: EventLog,
  projection: SchedulerProjection,
  streamId: string,
): bigint | "no_stream" | Promise<bigint | "no_stream"> {
  const inst = projection.instances.get(streamId);
  return inst ? inst.revision : revisionAsOf(log, streamId, projection.position);
}
