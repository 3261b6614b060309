import { runHttp } from "./http.js";
import { runNode } from "./node.js";
import { runNoop } from "./noop.js";
import { refusePython } from "./python.js";
import { runShell } from "./shell.js";
import type { WorkerOperator } from "./spec.js";
import type { OperatorContext, OperatorOutcome } from "./types.js";

/** Runs any operator with the runner for its type. */
export function runOperator(spec: WorkerOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  switch (spec.type) {
    case "shell":
      return runShell(spec, ctx);
    case "http":
      return runHttp(spec, ctx);
    case "node":
      return runNode(spec, ctx);
    case "python":
      return refusePython(spec, ctx);
    case "noop":
      return runNoop(spec, ctx);
    case "external":
      // parseOperator refuses it first: an outside task's intervals are reported, never run.
      return Promise.reject(new Error("an external task is never run by a worker"));
  }
}
