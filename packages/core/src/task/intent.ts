import type { DomainEventOf } from "../events/catalog.js";
import { runIdOf } from "../run/state.js";
import type { OperatorSpec } from "../spec.js";
import type { TaskState } from "./state.js";

/**
 * The intent to run `attempt` of the task's current interval, with its rendered operator and
 * dispatch token: written durably before any worker hears of the attempt.
 */
export function intentEvent(
  task: TaskState,
  attempt: number,
  token: string,
  operator: OperatorSpec,
  cacheKey: string | undefined,
): DomainEventOf<"DispatchIntended"> {
  const conn = task.spec.connection;
  return {
    type: "DispatchIntended",
    data: {
      key: task.key,
      logicalDate: task.logicalDate,
      attempt,
      token,
      operator: operator as unknown as Record<string, unknown>,
      idempotent: task.spec.idempotent,
      leaseSeconds: task.spec.leaseSeconds,
      // Optional fields last: adding properties after a spread is the engine's slow path.
      ...(conn ? { connection: conn } : {}),
      ...(task.spec.workflow ? { runId: runIdOf(task.spec.workflow, task.logicalDate) } : {}),
      ...(cacheKey !== undefined ? { cacheKey } : {}),
    },
  };
}
