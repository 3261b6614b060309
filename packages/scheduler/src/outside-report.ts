import {
  decideOutsideReport,
  foldInstance,
  instanceStream,
  type OutsideReport,
  type OutsideReportDecision,
  type OutsideReportInput,
  runIdOf,
  type SchedulerProjection,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { handleCommand } from "./command.js";
import { catchUp } from "./projection-loader.js";
import { readRun } from "./runs.js";

export interface OutsideReportResult extends OutsideReportDecision {
  /** Log position of the last event written (-1: nothing was written). */
  readonly position: bigint;
}

/**
 * Records a report of an outside task's interval: read (the interval's attempt stream and its
 * run from the log, the rest from the projection), decided by the core's `decideOutsideReport`,
 * written in one atomic append with a compare-and-set on every stream it touches. On a conflict
 * (another report, or the scheduler, wrote first) the projection is caught up and the report
 * decided again: a report made twice at once is written once.
 */
export async function reportInterval(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
  logicalDate: string,
  report: OutsideReport,
  options: { readonly by: string; readonly now?: number },
): Promise<OutsideReportResult> {
  const outcome = await handleCommand(log, {
    name: `report ${id} ${logicalDate}`,
    read: async (fresh): Promise<OutsideReportInput> => {
      if (fresh) await catchUp(log, projection);
      const task = projection.tasks.get(id);
      const instance = task
        ? foldInstance(await log.readStream(instanceStream(task.key, logicalDate)))
        : undefined;
      const wf = task?.spec.workflow;
      const run = wf === undefined ? null : await readRun(log, runIdOf(wf, logicalDate));
      return {
        tasks: projection.tasks,
        childrenOf: (t) => projection.children.of(t),
        instances: projection.instances,
        taskId: id,
        logicalDate,
        instance,
        run: run === null ? null : { state: run.run, revision: run.revision },
        now: options.now ?? Date.now(),
        by: options.by,
      };
    },
    decide: (input) => {
      const decided = decideOutsideReport(input, report);
      return { writes: decided.writes, result: decided };
    },
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const positions = outcome.kind === "written" ? outcome.results.map((r) => r.position) : [];
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const position = positions.reduce((a, b) => (b > a ? b : a), -1n);
  return { ...outcome.result, position };
}
