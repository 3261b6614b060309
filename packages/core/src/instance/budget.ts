import type { AttemptView } from "./state.js";

/**
 * An attempt's place in its interval's retry budget. Every attempt of an interval counts, those
 * of reruns, triggers and backfills of it included (they continue its attempt numbers), except
 * the attempts a shutdown interrupted; the budget is the task's `retry.maxAttempts` as declared
 * now. A failure retries while its place is below the budget.
 */
export interface BudgetPlace {
  /** Its place (1 for the first counted attempt), or null for an interrupted one (not counted). */
  readonly place: number | null;
  /** The budget: attempts allowed, the first included. */
  readonly of: number;
}

/** The place of the attempt numbered `attempt`, among the attempts of its interval. */
export function budgetPlace(
  attempts: readonly Pick<AttemptView, "attempt" | "status">[],
  attempt: number,
  maxAttempts: number,
): BudgetPlace {
  let interrupted = 0;
  for (const a of attempts) {
    if (a.attempt === attempt) {
      if (a.status === "interrupted") return { place: null, of: maxAttempts };
      break;
    }
    if (a.attempt < attempt && a.status === "interrupted") interrupted += 1;
  }
  return { place: attempt - interrupted, of: maxAttempts };
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

/** Each attempt of one interval with its place in a budget of `maxAttempts`. */
export function withBudget<A extends AttemptView>(
  attempts: readonly A[],
  maxAttempts: number,
): BudgetedAttempt<A>[] {
  return attempts.map((a) => {
    const budget = budgetPlace(attempts, a.attempt, maxAttempts);
    return { ...a, budget, budgetText: budgetText(budget) };
  });
}
