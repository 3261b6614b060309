import { currentAttempt, type InstanceState } from "./state.js";

/**
 * What a worker that holds an attempt is told, besides what its reports write: `proceed` (its
 * start is on record and it is current: one that waits for its start permission may run),
 * `stop` (it is not, or no longer, the current attempt of its interval, or its interval's
 * attempt ended: it must not run, or go on running), or `none` (nothing to say: the log does not
 * show the attempt yet, its start is not on record yet, or it is idempotent and needs no permission).
 */
export type HeldAttemptAnswer = "proceed" | "stop" | "none";

/**
 * The answer for attempt `token`, which a worker holds (it announced it when it registered,
 * answered a question with it, or reported its start or a heartbeat), given its attempt stream as
 * the log has it (after the reports being written, if any). Asked at every such moment rather
 * than once: a permission sent once can go with the scheduler that sent it (killed before its
 * command left, or its worker's link broken meanwhile), and a worker waiting for it waits forever.
 * The permission goes only to an attempt whose start is durable and current, so a worker never
 * runs an attempt the log does not say started; a worker runs an attempt once whatever it is told
 * (it keeps its token), so saying it again is harmless.
 */
export function answerHeldAttempt(inst: InstanceState | undefined, token: string): HeldAttemptAnswer {
  // Not in the log as known here (yet): a stream read ahead of its intent is no ground to stop it.
  if (!inst?.attempts.some((a) => a.token === token)) return "none";
  const current = currentAttempt(inst);
  // Replaced by a retry (or abandoned and tried again): never this attempt's turn again.
  if (current?.token !== token) return "stop";
  switch (current.status) {
    case "running":
      return inst.idempotent ? "none" : "proceed";
    // Its start is not on record: the worker's start report, or its next heartbeat, writes it.
    case "queued":
    case "lease_expired":
      return "none";
    // Ended (its outcome written, abandoned, cancelled, interrupted): it must not run.
    default:
      return "stop";
  }
}
