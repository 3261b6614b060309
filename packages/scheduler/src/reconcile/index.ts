// The reconcile checks are pure and live in the core; they are exported here too, for callers
// that reach them through the scheduler.
export {
  decideExpiredLease,
  decideStuckInstance,
  decideUnconfirmedIntent,
  isUnconfirmed,
  type LeaseDecision,
  needsScheduler,
  runNeedsRepair,
} from "@chronolog/core";
export * from "./lease-book.js";
export * from "./reconciler.js";
