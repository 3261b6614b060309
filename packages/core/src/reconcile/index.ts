export { decideExpiredLease, type LeaseDecision } from "./expired-lease.js";
export {
  checkLostWorker,
  decideLostWorker,
  type LostWorkerCheck,
  type LostWorkerDecision,
  PROCESS_ENDED,
  type WorkerFacts,
} from "./lost-worker.js";
export { runNeedsRepair } from "./run-needs-repair.js";
export { decideStuckInstance, needsScheduler } from "./stuck-instance.js";
export {
  decideUnconfirmedIntent,
  type IntentGraceFacts,
  intentGrace,
  isUnconfirmed,
} from "./unconfirmed-intent.js";
