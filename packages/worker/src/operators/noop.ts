import type { NoopOperator } from "./spec.js";
import type { OperatorContext, OperatorOutcome } from "./types.js";

const DONE: OperatorOutcome = { ok: true, durationMs: 0, exitCode: null, stdoutTail: "", stderrTail: "" };

/** Does nothing and succeeds at once. */
export function runNoop(_spec: NoopOperator, _ctx: OperatorContext): Promise<OperatorOutcome> {
  return Promise.resolve(DONE);
}
