import {
  decideHalted,
  foldInstance,
  type HaltedCommand,
  type HaltedDecision,
  type HaltedInput,
  instanceStream,
  runIdOf,
  type SchedulerProjection,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { handleCommand } from "./command.js";
import { catchUp } from "./projection-loader.js";
import { readRun } from "./runs.js";

export interface HaltedResult extends HaltedDecision {
  /** Log position of the last event written. */
  readonly position: bigint;
}

/**
 * Retries, or marks succeeded or skipped, one interval of a task: read (the interval's attempt
 * stream and its run from the log, the rest from the projection), decided by the core's
 * `decideHalted`, written in one atomic append with a compare-and-set on every stream it
 * touches. On a conflict (the scheduler wrote first) the projection is caught up and the command
 * decided again, so a refusal is about the interval as it is now.
 */
export async function actOnInterval(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
  logicalDate: string | undefined,
  command: HaltedCommand,
  options: { readonly by: string; readonly now?: number },
): Promise<HaltedResult> {
  const outcome = await handleCommand(log, {
    name: `${command.kind} ${id} ${logicalDate ?? ""}`.trim(),
    read: async (fresh): Promise<HaltedInput> => {
      if (fresh) await catchUp(log, projection);
      const task = projection.tasks.get(id);
      // Default: the interval the task stands at.
      const date = logicalDate ?? task?.failure?.logicalDate ?? task?.logicalDate ?? "";
      const instance = task ? foldInstance(await log.readStream(instanceStream(task.key, date))) : undefined;
      const wf = task?.spec.workflow;
      const run = wf === undefined ? null : await readRun(log, runIdOf(wf, date));
      return {
        tasks: projection.tasks,
        childrenOf: (t) => projection.children.of(t),
        instances: projection.instances,
        taskId: id,
        logicalDate: date,
        instance,
        run: run === null ? null : { state: run.run, revision: run.revision },
        now: options.now ?? Date.now(),
        by: options.by,
      };
    },
    decide: (input) => {
      const decided = decideHalted(input, command);
      return {
        writes: decided.writes.map((w) => ({ ...w, events: w.events })),
        result: decided,
      };
    },
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const positions = outcome.kind === "written" ? outcome.results.map((r) => r.position) : [];
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const position = positions.reduce((a, b) => (b > a ? b : a), -1n);
  return { ...outcome.result, position };
}
