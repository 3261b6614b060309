import {
  instanceStream,
  type QueueRoom,
  type RunAdmission,
  type RunState,
  type SchedulerProjection,
  type Slots,
  type TaskKey,
  type TaskState,
} from "@chronolog/core";
import type { ConnectionSlots } from "./connection-slots.js";
import type { RunSlots } from "./run-slots.js";

/** A run that a pass's dispatches start: its RunStarted is written before any of its intents. */
export interface RunToStart {
  readonly workflow: string;
  readonly logicalDate: string;
  readonly trigger: "schedule" | "backfill";
  readonly revision: bigint | "no_stream";
  readonly requestedBy?: string;
  /** The tasks that reopen a finished run (a backfill): only they restart in it. */
  readonly reopening: TaskKey[];
}

/** The workers of each queue and their free slots, as the scheduler's dispatcher knows them. */
export interface QueueRooms {
  room(queue: string): QueueRoom;
  /** Hears of a queue whose room may have grown (a worker connected, an attempt ended). */
  onChange(listener: (queue: string) => void): () => void;
}

/**
 * The slots as one scheduler pass gives them out: what is in use (the projection's, and the
 * dispatches being written) plus what the pass has admitted so far, so that `admitTask` decides
 * each task on the slots the tasks before it left.
 */
export class PassSlots implements Slots {
  /** runId -> slots in use, once the pass has admitted a task to the run. */
  private readonly runsInUse = new Map<string, number>();
  private active: Map<string, number> | null = null;
  /** The runs the pass's dispatches start. */
  readonly toStart = new Map<string, RunToStart>();
  /** queue -> attempts the pass has admitted to it. */
  private readonly queueTaken = new Map<string, number>();
  /** The workers' slots per queue, when remote workers are served (see QueueRooms). */
  readonly queueRoom?: (queue: string) => QueueRoom;

  constructor(
    private readonly projection: SchedulerProjection,
    private readonly connections: ConnectionSlots,
    private readonly runs: RunSlots,
    queues?: QueueRooms,
  ) {
    if (queues)
      this.queueRoom = (queue) => {
        const room = queues.room(queue);
        const taken = this.queueTaken.get(queue) ?? 0;
        return taken === 0 ? room : { ...room, busy: room.busy + taken };
      };
  }

  connectionInUse(connection: string): number {
    return this.connections.inUse(connection);
  }

  runSlotsInUse(runId: string, run: RunState | undefined): number {
    return this.runsInUse.get(runId) ?? this.runs.taken(runId, run);
  }

  activeRuns(workflow: string): number {
    if (!this.active) {
      const active = new Map<string, number>();
      for (const r of this.projection.runs.values())
        if (r.status === "running") active.set(r.workflow, (active.get(r.workflow) ?? 0) + 1);
      // Runs whose RunStarted is being written by an earlier pass count as going too.
      for (const [id, wf] of this.runs.startingRuns())
        if (this.projection.runs.get(id)?.status !== "running") active.set(wf, (active.get(wf) ?? 0) + 1);
      this.active = active;
    }
    return this.active.get(workflow) ?? 0;
  }

  runStarting(runId: string): boolean {
    return this.toStart.has(runId);
  }

  /** Takes the slots of a task admitted as `run` (and its connection's). */
  take(task: TaskState, run: RunAdmission | null): void {
    if (run) {
      if (run.start) {
        let start = this.toStart.get(run.runId);
        if (!start) {
          start = { workflow: run.workflow, logicalDate: run.logicalDate, ...run.start, reopening: [] };
          this.toStart.set(run.runId, start);
          this.activeRuns(run.workflow);
          this.active?.set(run.workflow, (this.active.get(run.workflow) ?? 0) + 1);
        }
        start.reopening.push(task.key);
      }
      this.runsInUse.set(run.runId, this.runSlotsInUse(run.runId, this.projection.runs.get(run.runId)) + 1);
      this.runs.reserve(run.runId, task.id);
    }
    const conn = task.spec.connection;
    if (conn) this.connections.reserve(conn, instanceStream(task.key, task.logicalDate));
    const queue = task.spec.queue;
    if (queue !== undefined) this.queueTaken.set(queue, (this.queueTaken.get(queue) ?? 0) + 1);
  }

  /** Gives back what `take` took, for a task whose run could not be started. */
  giveBack(task: TaskState, run: RunAdmission | null): void {
    if (run) this.runs.release(run.runId, task.id, true);
    const conn = task.spec.connection;
    if (conn) this.connections.release(conn, instanceStream(task.key, task.logicalDate));
  }
}
