import {
  type DomainEvent,
  decideRun,
  formatTaskKey,
  instanceStream,
  parseTaskKey,
  runStream,
  type SchedulerProjection,
  type TaskKey,
  tasksRunningDate,
} from "@chronolog/core";
import type { EventLog, StreamWrite } from "@chronolog/log";
import type { RunToStart } from "./admission/pass-slots.js";
import type { RunSlots } from "./admission/run-slots.js";
import type { Agenda } from "./agenda.js";
import { alertWrites } from "./alerts.js";
import { type Decided, handleCommand } from "./command.js";
import type { Outbox } from "./outbox.js";
import type { Ownership } from "./ownership.js";
import { type RunRead, readRun } from "./runs.js";
import type { SchedulerLogger } from "./scheduler-types.js";
import { heldRevision } from "./standing-checks.js";

/** What the run keeper works with, beside the log and the projection. */
export interface RunKeeperParts {
  readonly runSlots: RunSlots;
  readonly ownership: Ownership;
  /** A run or a workflow's runs changed: the tasks waiting on `run:<id>` or `run:<workflow>` wake. */
  readonly agenda: Agenda;
  readonly outbox: Outbox;
  /** The scheduler's counters: conflicts are counted here. */
  readonly stats: { conflicts: number };
  readonly logger: SchedulerLogger;
}

/**
 * Keeps workflow runs: starts them (RunStarted, durably, before any of their intents), and
 * applies the core's run decider when a run changes — closing what its failure policy skips,
 * cancelling what a fail-fast run stops, finishing it when every task is terminal.
 */
export class RunKeeper {
  /** Runs with a decision being written: one at a time per run. */
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly log: EventLog,
    private readonly projection: SchedulerProjection,
    private readonly parts: RunKeeperParts,
  ) {}

  /** Writes each run's RunStarted; returns the runs that are going (started here, or by another writer). */
  async start(runs: ReadonlyMap<string, RunToStart>): Promise<Set<string>> {
    const started = new Set<string>();
    await Promise.all(
      [...runs].map(async ([runId, r]) => {
        this.parts.runSlots.startRun(runId, r.workflow);
        try {
          const outcome = await handleCommand(this.log, {
            name: `start run ${runId}`,
            // First the projection's view; after a conflict, the log's: the run may be one the
            // projection no longer holds (an old date a backfill reopens), or another writer's.
            read: (fresh): Promise<RunRead> | RunRead =>
              fresh
                ? readRun(this.log, runId)
                : { run: this.projection.runs.get(runId), revision: r.revision },
            decide: (state) => this.decideStart(runId, r, state),
            onConflict: (_error, tries) => (tries < 2 ? "retry" : "give_up"),
          });
          // Nothing written (another writer started it) or a conflict: the run is going, which is
          // all that is needed. A written one stops counting as "starting" once the projection
          // shows it (see runStarted).
          if (outcome.kind !== "written") this.parts.runSlots.runStarted(runId);
          started.add(runId);
        } catch (error) {
          this.parts.runSlots.runStarted(runId);
          this.parts.logger.error({ err: error, run: runId }, "could not start the run");
        }
      }),
    );
    return started;
  }

  /**
   * A new run on the schedule has every task of the workflow. A backfill's (a reopened run, or a
   * new run of a date a backfill set tasks back to) has the tasks that run its date: those
   * starting now and every other task of the workflow that stands at that date (held for a
   * slot, or waiting for a parent) or whose backfill walks to it; the rest keep their outcomes
   * (or, in a new run, are not part of it), so the run can finish, but not before the tasks that
   * run it.
   */
  private decideStart(runId: string, r: RunToStart, state: RunRead): Decided<string> {
    if (state.run?.status === "running") return { writes: [], result: runId };
    const workflowTasks = [...this.projection.tasks.values()].filter(
      (t) => t.spec.workflow === r.workflow && t.status !== "retired",
    );
    const reopening = state.revision !== "no_stream";
    // A backfill's try (a new run of a date a backfill set tasks back to, or a run reopened)
    // has the tasks that run the date: those starting now and those standing at it or walking
    // to it; a new run on the schedule has every task.
    const tasks =
      reopening || r.trigger === "backfill"
        ? uniqueKeys([
            ...r.reopening,
            ...tasksRunningDate(workflowTasks, r.workflow, r.logicalDate).map((t) => t.key),
          ])
        : workflowTasks.map((t) => t.key);
    return {
      writes: [
        {
          streamId: runStream(runId),
          events: [
            {
              type: "RunStarted",
              data: {
                runId,
                workflow: r.workflow,
                logicalDate: r.logicalDate,
                tasks,
                trigger: reopening ? "backfill" : r.trigger,
                // A new run has the workflow's param defaults; a reopened one keeps the params
                // it was started with (RunStarted merges them).
                params: reopening ? {} : { ...(this.projection.workflows.get(r.workflow)?.params ?? {}) },
                try: (state.run?.try ?? 0) + 1,
                ...(r.requestedBy ? { requestedBy: r.requestedBy } : {}),
              },
            },
          ],
          expectedRevision: state.revision,
        },
      ],
      result: runId,
    };
  }

  /** A run changed: apply its failure policy, finish it when every task is terminal. */
  async evaluate(runId: string): Promise<void> {
    const run = this.projection.runs.get(runId);
    if (!run) return;
    this.parts.agenda.wakeWaiters(`run:${runId}`);
    this.parts.agenda.wakeWaiters(`run:${run.workflow}`);
    if (
      run.status !== "running" ||
      this.inFlight.has(runId) ||
      !this.parts.ownership.owns({ id: run.runId, spec: { workflow: run.workflow } })
    )
      return;
    const decision = decideRun(
      run,
      this.projection.workflows.get(run.workflow),
      (t) => this.projection.tasks.get(t)?.key ?? (parseTaskKey(t) as { key: TaskKey }).key,
      (t) => (this.projection.tasks.get(t)?.parents ?? []).map(formatTaskKey),
    );
    if (decision.close.length === 0 && decision.cancel.length === 0 && !decision.finish) return;
    this.inFlight.add(runId);
    try {
      const writes: Array<Promise<void>> = [];
      // Each interval closed at its revision as the decision saw it, read in the decision's turn:
      // one dispatched since (the pass decided it before the run's failure was seen) is then not
      // closed over, its attempt left running. An earlier run of this date may have left the
      // stream, no longer held in memory: read from the log as of the same position.
      const closing = decision.close.flatMap(({ task, event }) => {
        const key = this.projection.tasks.get(task)?.key;
        if (!key) return [];
        const stream = instanceStream(key, run.logicalDate);
        return [{ stream, event, revision: heldRevision(this.log, this.projection, stream) }];
      });
      for (const { stream, event, revision } of closing)
        writes.push(
          Promise.resolve(revision).then(
            (r) => this.write(stream, [event], r),
            (error: unknown) => {
              // As a write that fails: said, and the run decided again when it is next looked at.
              this.parts.logger.error({ err: error, stream }, "could not read a closed interval's revision");
            },
          ),
        );
      for (const task of decision.cancel) {
        const key = this.projection.tasks.get(task)?.key;
        if (!key) continue;
        const stream = instanceStream(key, run.logicalDate);
        const inst = this.projection.instances.get(stream);
        const a = inst?.attempts.at(-1);
        if (!inst || !a) continue;
        const reason = `run ${runId} failed fast`;
        this.parts.outbox.stop(a.token, reason);
        writes.push(
          this.write(
            stream,
            [{ type: "AttemptCancelled", data: { attempt: a.attempt, token: a.token, reason } }],
            inst.revision,
          ),
        );
      }
      if (decision.finish) {
        const f = decision.finish.data;
        // A failed run's alert is raised in the append that finishes it.
        const alerts =
          f.state === "failed"
            ? alertWrites(
                this.projection,
                "run_failed",
                {
                  workflow: run.workflow,
                  runId,
                  logicalDate: run.logicalDate,
                  reason: [
                    f.failed.length > 0 ? `failed: ${f.failed.join(", ")}` : "",
                    f.upstreamFailed.length > 0 ? `upstream_failed: ${f.upstreamFailed.join(", ")}` : "",
                    f.cancelled.length > 0 ? `cancelled: ${f.cancelled.join(", ")}` : "",
                  ]
                    .filter(Boolean)
                    .join("; "),
                },
                `try${run.try}`,
              )
            : [];
        writes.push(this.write(runStream(runId), [decision.finish], run.revision, alerts));
      }
      await Promise.all(writes);
    } finally {
      this.inFlight.delete(runId);
    }
  }

  /** A compare-and-set append whose conflict only means someone decided first. */
  private async write(
    stream: string,
    events: DomainEvent[],
    expected: bigint | "no_stream",
    alerts: readonly StreamWrite[] = [],
  ): Promise<void> {
    try {
      const outcome = await handleCommand(this.log, {
        name: `run decision on ${stream}`,
        read: () => null,
        decide: () => ({
          writes: [{ streamId: stream, events, expectedRevision: expected }, ...alerts],
          result: null,
        }),
      });
      if (outcome.kind === "conflict") this.parts.stats.conflicts += 1;
    } catch (error) {
      this.parts.logger.error({ err: error, stream }, "could not write a run decision");
    }
  }
}

function uniqueKeys(keys: readonly TaskKey[]): TaskKey[] {
  const seen = new Set<string>();
  return keys.filter((k) => {
    const id = formatTaskKey(k);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}
