/**
 * Fault-injection hooks. They exist only for the black-box fault tests, which need a real worker
 * process to misbehave in ways that are otherwise hard to provoke on cue; production never sets
 * them. They are read once, when the worker process starts, from its environment:
 *
 *   CHRONOLOG_FAULT   a comma-separated list of fault names (hooks inactive when unset or empty):
 *
 *   - `worker-exit-before-report`: after a *targeted* attempt's operator has finished (success or
 *     failure, outputs published), and before its final report is sent, the worker process kills
 *     itself with SIGKILL. The coordinator sees the side effects of a run but never its result.
 *     An attempt is targeted when `CHRONOLOG_FAULT_TARGET=1` is in its RunCommand `env` or, for a
 *     shell task, in the operator's own `env`. (The worker's own environment does not count, so a
 *     test aims at exactly the tasks it marks.)
 *   - `worker-duplicate-reports`: every final report (succeeded/failed) is sent twice, in two
 *     separate batches.
 *
 * An unknown name is an error (the worker does not start), so a typo cannot silently disable a
 * fault test.
 */
import type { WorkerOperator } from "./operators/spec.js";
import type { RunCommand } from "./protocol.js";

export const FAULT_ENV = "CHRONOLOG_FAULT";
export const FAULT_TARGET_ENV = "CHRONOLOG_FAULT_TARGET";

export const FAULT_NAMES = ["worker-exit-before-report", "worker-duplicate-reports"] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

/** What a WorkerRuntime does differently under fault injection. */
export interface WorkerFaults {
  /** Called after an attempt's operator has finished and before its final report is queued. */
  readonly afterOperator?: (cmd: RunCommand, spec: WorkerOperator) => void;
  /** Send every final report twice, in two batches. */
  readonly duplicateFinalReports?: boolean;
}

/** Whether a fault aimed at "targeted" attempts applies to this one (see the module comment). */
export function isFaultTarget(cmd: RunCommand, spec: WorkerOperator): boolean {
  if (cmd.env?.[FAULT_TARGET_ENV] === "1") return true;
  return spec.type === "shell" && spec.env?.[FAULT_TARGET_ENV] === "1";
}

/** The faults named in `CHRONOLOG_FAULT`, or undefined when there are none. */
export function faultsFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerFaults | undefined {
  const names = (env[FAULT_ENV] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) return undefined;
  for (const n of names) {
    if (!(FAULT_NAMES as readonly string[]).includes(n)) {
      throw new Error(`${FAULT_ENV}: unknown fault ${JSON.stringify(n)} (known: ${FAULT_NAMES.join(", ")})`);
    }
  }
  const on = new Set(names);
  return {
    afterOperator: on.has("worker-exit-before-report")
      ? (cmd, spec) => {
          if (isFaultTarget(cmd, spec)) process.kill(process.pid, "SIGKILL");
        }
      : undefined,
    duplicateFinalReports: on.has("worker-duplicate-reports"),
  };
}
