import type { DomainEvent } from "../events/catalog.js";
import { haltingProcessEnd, SUCH_ENDS_IN_A_ROW } from "../instance/decide-report.js";
import { currentAttempt, type InstanceState } from "../instance/state.js";
import { PROCESS_ENDED } from "./lost-worker.js";

/**
 * Reconcile check: an intent recorded but never confirmed by a worker. The dispatch may have
 * been lost (the scheduler died between intent and dispatch, the message never arrived).
 * `isUnconfirmed` says whether an instance is one to ask the workers about; once they have
 * answered, `decideUnconfirmedIntent` abandons an attempt no worker knows so that it is
 * retried with a new attempt and a new token, and leaves alone one a worker knows (the worker
 * will report).
 */
export function isUnconfirmed(
  inst: InstanceState,
  now: number,
  graceMs: number,
  dispatchedAt?: number,
): boolean {
  const a = currentAttempt(inst);
  if (inst.status !== "queued" || !a || a.status !== "queued") return false;
  // Every intent gets a grace period, counted from its dispatch by this process or, failing
  // that, from when it was recorded: a scheduler may be about to dispatch an intent it just wrote.
  const since = dispatchedAt ?? Date.parse(a.intendedAt);
  return now - since >= graceMs;
}

/** What an intent's grace period is counted from, and how long it is. */
export interface IntentGraceFacts {
  /** The grace of an intent nobody else may hold (ms). */
  readonly graceMs: number;
  /** When this process dispatched it, if it did. */
  readonly dispatchedAt?: number;
  /** Whether its task is on a queue: its attempts go to remote workers. */
  readonly onQueue: boolean;
  /**
   * From when this process's remote workers may have reconnected: when its reconcile loop began,
   * its registrations taken since before then.
   */
  readonly listeningSince: number;
}

/**
 * The grace period of an intent, in ms, and the moment it counts from (undefined: from when the
 * intent was recorded). An intent of a task on a queue may be in a remote worker's hands though
 * no worker answers for it now: given by an earlier process before it died, or by this one to a
 * worker whose link is cut. An idempotent attempt does not wait for a start permission, so that
 * worker may be running it. A worker that cannot report fences itself (kills the attempt)
 * within two thirds of its lease without a delivery; so such an intent is given a whole lease,
 * counted from its dispatch here or else from when this process's reconcile loop began (the earlier
 * process's workers reconnect to it), before it may be abandoned and retried elsewhere.
 */
export function intentGrace(
  inst: InstanceState,
  facts: IntentGraceFacts,
): { graceMs: number; since?: number } {
  const a = currentAttempt(inst);
  if (!facts.onQueue || !a) return { graceMs: facts.graceMs, since: facts.dispatchedAt };
  return {
    graceMs: Math.max(facts.graceMs, inst.leaseSeconds * 1000),
    since: facts.dispatchedAt ?? Math.max(Date.parse(a.intendedAt), facts.listeningSince),
  };
}

/**
 * The events that close an unconfirmed intent, or none while a worker knows the attempt. It is
 * tried again with a new attempt; but an intent left by a scheduler process that ended (killed,
 * crashed: `processEnded`) is one such end, as an attempt interrupted by it is, and the fourth
 * in a row is left for an operator: the task itself may be what ends the service, before its
 * start is even recorded.
 */
export function decideUnconfirmedIntent(
  inst: InstanceState,
  knownToAWorker: boolean,
  by: string,
  processEnded = false,
): DomainEvent[] {
  const a = currentAttempt(inst);
  if (!a || knownToAWorker) return [];
  const nth = processEnded ? haltingProcessEnd(inst) : undefined;
  const reason = processEnded
    ? `dispatch never confirmed by a worker: it ${PROCESS_ENDED}${nth !== undefined ? `, ${SUCH_ENDS_IN_A_ROW(nth)}: not run again on its own (the task may be what ends its scheduler)` : ""}`
    : "dispatch never confirmed by a worker";
  return [
    {
      type: "AttemptAbandoned",
      data: { attempt: a.attempt, token: a.token, reason, by, retry: nth === undefined },
    },
  ];
}
