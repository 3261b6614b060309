import type { PythonOperator } from "./spec.js";
import { failure, type OperatorContext, type OperatorOutcome } from "./types.js";

/**
 * A python task is run by a Python worker serving its queue, never by a Node worker: one given
 * it (the scheduler's own pool) fails the attempt at once, saying where it runs.
 */
export function refusePython(spec: PythonOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  const queue =
    ctx.queue === undefined
      ? "none declared: give the task a queue: NAME and start a Python worker on it"
      : ctx.queue;
  return Promise.resolve(
    failure(
      "exception",
      `python tasks run on a Python worker (queue ${queue}); this Node worker did not run ${spec.function}`,
      0,
    ),
  );
}
