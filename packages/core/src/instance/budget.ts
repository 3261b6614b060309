import type { AttemptView } from "./state.js";

/**
 * An attempt's place in its interval's retry budget. An interval reopened after it ended (by
 * `retry`, a rerun, a trigger or a backfill) starts a fresh budget: its attempt numbers go on,
 * and its places count again from 1 after `from`, the last attempt before the reopening. The
 * attempts a shutdown interrupted never count; the budget is the task's `retry.maxAttempts` as
 * declared now. A failure retries while its place is below the budget.
 */
export interface BudgetPlace {
  /** Its place (1 for the first counted attempt), or null for an interrupted one (not counted). */
  readonly place: number | null;
  /** The budget: attempts allowed, the first included. */
  readonly of: number;
}

/**
 * The place of the attempt numbered `attempt`, among the attempts of its interval, in the budget
 * that began after attempt `from` (0: the interval's first budget; an attempt at or before
 * `from` is placed in the budget before it).
 */
export function budgetPlace(
  attempts: readonly Pick<AttemptView, "attempt" | "status">[],
  attempt: number,
  maxAttempts: number,
  from = 0,
): BudgetPlace {
  const start = attempt > from ? from : 0;
  let interrupted = 0;
  for (const a of attempts) {
    if (a.attempt === attempt) {
      if (a.status === "interrupted") return { place: null, of: maxAttempts };
      break;
    }
    if (a.attempt > start && a.attempt < attempt && a.status === "interrupted") interrupted += 1;
  }
  return { place: attempt - start - interrupted, of: maxAttempts };
}

/** The place in words: "attempt 2 of 3", "attempt 4 of 3 (past its budget)", ... */
export function budgetText(p: BudgetPlace): string {
  if (p.place === null) return `not counted in its budget of ${p.of}`;
  if (p.place > p.of) return `attempt ${p.place} of ${p.of} (past its budget)`;
  return `attempt ${p.place} of ${p.of}`;
}

/** An attempt with its place in its interval's retry budget. */
export type BudgetedAttempt<A extends AttemptView = AttemptView> = A & {
  readonly budget: BudgetPlace;
  readonly budgetText: string;
};

/** Each attempt of one interval with its place in a budget of `maxAttempts` (see budgetPlace). */
export function withBudget<A extends AttemptView>(
  attempts: readonly A[],
  maxAttempts: number,
  from = 0,
): BudgetedAttempt<A>[] {
  return attempts.map((a) => {
    const budget = budgetPlace(attempts, a.attempt, maxAttempts, from);
    return { ...a, budget, budgetText: budgetText(budget) };
  });
}
