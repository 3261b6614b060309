import type { DomainEvent } from "../events/catalog.js";
import { currentAttempt, type InstanceState } from "../instance/state.js";

/**
 * Reconcile check: a running attempt whose lease expired. The worker may be dead or only cut
 * off, still running. If a live worker still knows the attempt, the lease is renewed.
 * Otherwise an idempotent task is retried (a second run is harmless); a task that is not
 * idempotent is marked lease-expired and waits, for the worker to come back and report or for
 * an operator's `chronolog attempt abandon`: never two concurrent attempts of it.
 */
export type LeaseDecision =
  | { readonly kind: "renew" }
  | { readonly kind: "write"; readonly events: DomainEvent[] }
  | { readonly kind: "wait" };

/** `now` is epoch milliseconds; it becomes the recorded time the lease expired at. */
export function decideExpiredLease(
  inst: InstanceState,
  knownToAWorker: boolean,
  now: number,
  by: string,
): LeaseDecision {
  const a = currentAttempt(inst);
  if (!a || (a.status !== "running" && a.status !== "lease_expired")) return { kind: "wait" };
  if (knownToAWorker) return { kind: "renew" };
  if (a.status === "lease_expired") return { kind: "wait" };
  const expired: DomainEvent = {
    type: "AttemptHeartbeatExpired",
    data: {
      attempt: a.attempt,
      token: a.token,
      leaseExpiredAt: new Date(now).toISOString(),
      ...(a.workerId ? { workerId: a.workerId } : {}),
    },
  };
  if (!inst.idempotent) return { kind: "write", events: [expired] };
  return {
    kind: "write",
    events: [
      expired,
      {
        type: "AttemptAbandoned",
        data: {
          attempt: a.attempt,
          token: a.token,
          reason: "lease expired and no worker knows the attempt",
          by,
          retry: true,
        },
      },
    ],
  };
}
