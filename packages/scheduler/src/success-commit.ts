import {
  admitTask,
  type DomainEventOf,
  decideStanding,
  evolveTask,
  instanceStream,
  type OperatorSpec,
  runIdOf,
  type SchedulerProjection,
  type Slots,
  type TaskState,
} from "@chronolog/core";
import type { AppendResult, EventLog, StreamWrite } from "@chronolog/log";
import type { RunCommand } from "@chronolog/worker";
import type { RunSlots } from "./admission/run-slots.js";
import type { InFlight } from "./inflight.js";
import { type IntentWriter, intentEvent, runCommand } from "./intent-writer.js";

/*
 * The success commit: a task's success, its advance and the intents of the children that
 * success lets start, written in one atomic append.
 */

/**
 * Writes to make in the same atomic append as a task's success (the intents of its children
 * that the success lets start), and what to do once that append has been made or has failed.
 */
export interface Alongside {
  readonly writes: readonly StreamWrite[];
  /**
   * The position of the last event the writes were decided on: the append is made only if the
   * log has not moved past it, so that they are decided on everything before them, as a pass
   * that the success wakes would decide.
   */
  readonly expectedHead: bigint;
  /** The append's results for `writes`, in order; null when it was not made. */
  settle(results: readonly AppendResult[] | null): void;
}

/** At most this many children start in the append of their parent's success. */
export const MAX_ALONGSIDE = 32;

/** What the children's decision needs of the scheduler it works for. */
export interface SuccessHost {
  /** Stopped, or no longer dispatching (a shutdown waits for what runs): nothing starts. */
  readonly halted: boolean;
  readonly inflight: InFlight;
  owns(task: TaskState): boolean;
  /** Decide the task again on the next pass. */
  wake(taskId: string): void;
  /** Hand attempts whose intents are durable to the workers. */
  send(commands: readonly RunCommand[]): void;
}

/**
 * The children a success starts in its own commit: a child's attempt is then one commit away
 * from its parent's end, not two. Each child is decided by the core's `decideTask` on the
 * projection as it will be once the success is applied; only the plain case goes this way — a
 * first attempt of a due child with no connection, not being backfilled and with no attempt
 * stream yet, of no workflow or of the parent's own run with a free slot (and no task of that
 * run waiting for one). Every other child is left to the pass, which the success wakes as before.
 */
export class SuccessCommit {
  constructor(
    private readonly log: EventLog,
    private readonly projection: SchedulerProjection,
    private readonly intents: IntentWriter,
    private readonly runSlots: RunSlots,
    private readonly host: SuccessHost,
    private readonly now: () => number,
    private readonly newToken: () => string,
  ) {}

  /** The children's intents to write with `task`'s success, or null (the pass starts them). */
  async childrenOf(
    task: TaskState,
    completed: DomainEventOf<"IntervalCompleted">,
  ): Promise<Alongside | null> {
    if (this.projection.children.count(task.id) === 0 || !this.log.supportsExpectedHead) return null;
    // Decided on everything committed so far: this process's latest commits may not have
    // reached the projection yet (its subscription hears of them a moment later).
    const head = await this.log.headPosition();
    for (let turns = 0; this.projection.position < head && turns < 3; turns++)
      await new Promise((resolve) => setImmediate(resolve));
    const children = this.projection.children.of(task.id);
    if (this.host.halted || this.projection.position < head) return null;
    const after = evolveTask(task, completed, { revision: task.revision + 1n, position: -1n });
    if (!after) return null;
    const ahead = new Map([[task.id, after]]);
    const now = this.now();
    const parentRun = task.spec.workflow ? runIdOf(task.spec.workflow, completed.data.logicalDate) : null;
    // The parent's own slot in its run is free once its success is written.
    const going = new Map<string, number>();
    const slots: Slots = {
      connectionInUse: () => 0,
      runSlotsInUse: (runId, run) => going.get(runId) ?? this.runSlots.taken(runId, run, task.id),
      // A run that is not going is the pass's to start.
      activeRuns: () => Number.POSITIVE_INFINITY,
      runStarting: () => false,
    };
    const planned: Array<{
      child: TaskState;
      runId: string | null;
      write: StreamWrite;
      command: RunCommand;
    }> = [];
    for (const id of children) {
      // A wide fan-out is the pass's: an append stays small, and so does the time to decide it.
      if (planned.length === MAX_ALONGSIDE) break;
      const child = this.projection.tasks.get(id);
      if (!child || !this.plain(child)) continue;
      const standing = decideStanding(this.projection, child, now, { ahead });
      if (standing.kind !== "ready" || standing.retry) continue;
      const d = admitTask(this.projection, child, standing, slots);
      if (d.kind !== "ready") continue;
      if (d.run) {
        if (
          d.run.runId !== parentRun ||
          d.run.start !== null ||
          !this.projection.workflows.has(d.run.workflow)
        )
          continue;
        // The pass gives a free slot to the task that waited longest.
        if (
          this.runSlots.waitsIn(
            child.logicalDate,
            (t) => this.projection.tasks.get(t)?.spec.workflow === d.run?.workflow,
          )
        )
          continue;
      }
      let operator: OperatorSpec;
      let cacheKey: string | undefined;
      try {
        operator = this.intents.render(child);
        cacheKey = this.intents.cacheKey(child);
      } catch {
        continue; // the pass holds the task and says why
      }
      if (cacheKey !== undefined && this.projection.hasCacheKey(child.id, cacheKey)) continue;
      const token = this.newToken();
      if (d.run)
        going.set(d.run.runId, slots.runSlotsInUse(d.run.runId, this.projection.runs.get(d.run.runId)) + 1);
      planned.push({
        child,
        runId: d.run?.runId ?? null,
        write: {
          streamId: instanceStream(child.key, child.logicalDate),
          events: [intentEvent(child, 1, token, operator, cacheKey)],
          expectedRevision: "no_stream",
        },
        command: runCommand(child, 1, token, operator),
      });
    }
    if (planned.length === 0) return null;
    for (const { child, runId } of planned) {
      this.host.inflight.pending(child.id);
      if (runId !== null) this.runSlots.reserve(runId, child.id);
    }
    return {
      writes: planned.map((p) => p.write),
      expectedHead: this.projection.position,
      settle: (results) => {
        if (!results) {
          for (const { child, runId } of planned) {
            this.host.inflight.clear(child.id);
            if (runId !== null) this.runSlots.release(runId, child.id, true);
            this.host.wake(child.id);
          }
          return;
        }
        planned.forEach(({ child }, i) => {
          const r = results[i];
          if (r) this.host.inflight.at(child.id, r.position);
        });
        this.host.send(planned.map((p) => p.command));
      },
    };
  }

  /** The cases only the pass decides: a connection's slot, a backfill, an interval that ran before. */
  private plain(child: TaskState): boolean {
    return (
      !child.spec.connection &&
      // (A backfill goes back over intervals that may have run before: the pass reads those.)
      child.backfill === null &&
      this.host.owns(child) &&
      !this.host.inflight.has(child.id) &&
      !this.projection.instances.has(instanceStream(child.key, child.logicalDate))
    );
  }
}
