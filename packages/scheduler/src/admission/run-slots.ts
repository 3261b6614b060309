import { type RunState, runSlotsGoing } from "@chronolog/core";
import type { Agenda } from "../agenda.js";
import { setIn } from "../sets.js";

/**
 * The slots of each run's `maxActiveTasks`, and the runs being started. A task admitted to a
 * run holds a slot from its admission until the projection shows its intent, so that passes that
 * overlap do not admit more than the limit; a run's free slot goes to the highest priority
 * (see `compareWaiters`), then to the task that has waited longest for one.
 */
export class RunSlots {
  /** runId -> tasks admitted to the run whose intent the projection does not show yet. */
  private readonly reserved = new Map<string, Set<string>>();
  /** task -> since when (a counter) it has waited for a slot in its run, for which interval. */
  private readonly waiting = new Map<string, { logicalDate: string; since: number }>();
  private waits = 0;
  /** runId -> workflow, while this scheduler writes the run's RunStarted. */
  private readonly starting = new Map<string, string>();

  constructor(
    /** A slot of a run may have come free: what waits for it (`run:<run id>`) is woken. */
    private readonly agenda: Pick<Agenda, "wakeWaiters">,
  ) {}

  /** Slots in use: the run's attempts queued or running (but `except`'s), and those held for admitted tasks. */
  taken(runId: string, run: RunState | undefined, except?: string): number {
    return runSlotsGoing(run, except) + (this.reserved.get(runId)?.size ?? 0);
  }

  reserve(runId: string, taskId: string): void {
    setIn(this.reserved, runId).add(taskId);
  }

  /** Frees the slot held for `taskId` (its intent is shown, or was not written). */
  release(runId: string, taskId: string, wake: boolean): void {
    const set = this.reserved.get(runId);
    if (!set?.delete(taskId)) return;
    if (set.size === 0) this.reserved.delete(runId);
    if (wake) this.agenda.wakeWaiters(`run:${runId}`);
  }

  /** Whether any slot is held for an admitted task (a cheap test before looking up a run). */
  get holdsAny(): boolean {
    return this.reserved.size > 0;
  }

  /** Since when the task has waited for a slot for this interval (Infinity: it has not). */
  waitingSince(taskId: string, logicalDate: string): number {
    const w = this.waiting.get(taskId);
    return w && w.logicalDate === logicalDate ? w.since : Number.POSITIVE_INFINITY;
  }

  /** The task waits for a slot for this interval (from now, unless it already did). */
  wait(taskId: string, logicalDate: string): void {
    if (this.waitingSince(taskId, logicalDate) === Number.POSITIVE_INFINITY)
      this.waiting.set(taskId, { logicalDate, since: ++this.waits });
  }

  stopWaiting(taskId: string): void {
    this.waiting.delete(taskId);
  }

  /** Whether any task waits for a slot in any run. */
  get anyWaiting(): boolean {
    return this.waiting.size > 0;
  }

  /** Whether a task of `workflow`'s run at `logicalDate` waits for one of its slots. */
  waitsIn(logicalDate: string, inWorkflow: (taskId: string) => boolean): boolean {
    for (const [t, w] of this.waiting) if (w.logicalDate === logicalDate && inWorkflow(t)) return true;
    return false;
  }

  /** A finished run's tasks no longer wait for its slots (a rerun queues them afresh). */
  forgetWaits(run: RunState): void {
    if (this.waiting.size === 0) return;
    for (const t of run.tasks)
      if (this.waiting.get(t)?.logicalDate === run.logicalDate) this.waiting.delete(t);
  }

  /** This scheduler writes the run's RunStarted. */
  startRun(runId: string, workflow: string): void {
    this.starting.set(runId, workflow);
  }

  /** The run's RunStarted is in the projection, or was not written. */
  runStarted(runId: string): void {
    this.starting.delete(runId);
  }

  /** Runs being started by this scheduler, with their workflows. */
  startingRuns(): ReadonlyMap<string, string> {
    return this.starting;
  }
}
