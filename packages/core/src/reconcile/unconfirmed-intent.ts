import type { DomainEvent } from "../events/catalog.js";
import { currentAttempt, type InstanceState } from "../instance/state.js";

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

/** The events that close an unconfirmed intent, or none while a worker knows the attempt. */
export function decideUnconfirmedIntent(
  inst: InstanceState,
  knownToAWorker: boolean,
  by: string,
): DomainEvent[] {
  const a = currentAttempt(inst);
  if (!a || knownToAWorker) return [];
  return [
    {
      type: "AttemptAbandoned",
      data: {
        attempt: a.attempt,
        token: a.token,
        reason: "dispatch never confirmed by a worker",
        by,
        retry: true,
      },
    },
  ];
}
