import type { RetryPolicy } from "../spec.js";

/**
 * Delay before the attempt after `attempt` (1-based): exponential backoff capped at
 * maxDelayMs, plus jitter. `random` is a number in [0, 1) supplied by the caller, so the
 * result is a pure function of its inputs.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, random: number): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, attempt - 1));
  return Math.round(base + base * policy.jitter * Math.min(Math.max(random, 0), 1));
}

export function canRetry(policy: RetryPolicy, attempt: number): boolean {
  return attempt < policy.maxAttempts;
}
