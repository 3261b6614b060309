import { currentAttempt, type InstanceState } from "../instance/state.js";

/** What the reconciler knows of the worker an instance's current attempt runs on. */
export interface WorkerFacts {
  /** The worker is known to be gone (its scheduler process ended, or left the group). */
  readonly workerGone: boolean;
  /** The worker is one of this process's own: its heartbeats arrive here. */
  readonly ownWorker: boolean;
  /** When the attempt's lease runs out by this process's lease book (epoch ms); undefined: not seen here. */
  readonly leaseDeadline: number | undefined;
  /** Epoch milliseconds. */
  readonly now: number;
}

/**
 * Reconcile check: an attempt running, or lease-expired, on a worker known to be gone. In
 * embedded mode workers live and die with the scheduler process that forked them, so the
 * attempts of an earlier process's workers are lost, as their supervisor would have reported.
 * Another scheduler's worker is taken for lost only once its lease has run out here too: a
 * scheduler the group gave up on may be hung, not dead, with its workers busy. An attempt this
 * process never saw gets a fresh grace period, its lease length from now, as in the lease
 * book; `within_lease` carries the deadline for the reconciler to keep. A `lost` attempt is
 * still asked about: see `decideLostWorker`.
 */
export type LostWorkerCheck =
  | { readonly kind: "not_lost" }
  | { readonly kind: "within_lease"; readonly leaseDeadline: number }
  | { readonly kind: "lost" };

export function checkLostWorker(inst: InstanceState, facts: WorkerFacts): LostWorkerCheck {
  const a = currentAttempt(inst);
  if (!a || (a.status !== "running" && a.status !== "lease_expired")) return { kind: "not_lost" };
  if (!a.workerId || !facts.workerGone) return { kind: "not_lost" };
  if (facts.ownWorker) return { kind: "lost" };
  const leaseDeadline = facts.leaseDeadline ?? facts.now + inst.leaseSeconds * 1000;
  return leaseDeadline >= facts.now ? { kind: "within_lease", leaseDeadline } : { kind: "lost" };
}

/**
 * What to do with an attempt on a lost worker once the workers were asked: a worker that still
 * knows the attempt will report it, so it is left alone; otherwise it is reported interrupted.
 * Its worker went with the scheduler process that forked it (killed, crashed, or gone from the
 * group), as a shutdown's workers do, not through the task: as after a shutdown, an idempotent
 * task runs again apart from its retry budget, and a started one that is not idempotent is left
 * for the operator.
 */
export type LostWorkerDecision =
  | { readonly kind: "report_interrupted"; readonly reason: string }
  | { readonly kind: "leave" };

/** What the reason of an attempt whose worker went with its scheduler process says. */
export const PROCESS_ENDED = "belonged to an earlier scheduler process";

export function decideLostWorker(inst: InstanceState, knownToAWorker: boolean): LostWorkerDecision {
  const a = currentAttempt(inst);
  if (!a || knownToAWorker) return { kind: "leave" };
  return {
    kind: "report_interrupted",
    reason: `worker ${a.workerId} ${PROCESS_ENDED} and is gone`,
  };
}
