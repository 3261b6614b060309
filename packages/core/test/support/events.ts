import {
  type DomainEvent,
  type DomainEventOf,
  formatTaskKey,
  instanceStream,
  runStream,
  type TaskKey,
  type TaskSpec,
  type TaskSpecInput,
  taskSpecSchema,
  taskStream,
  workflowSpecSchema,
  workflowStream,
} from "@chronolog/core";
import { type Given, on } from "./specification.js";

/**
 * Events for the deciders' given/when/then tests: one builder per event the tests need, with
 * the defaults of a plain daily task, so each test states only what matters to it.
 */

export const keyOf = (name: string): TaskKey => ({ project: "p", account: "a", name, partition: "ALL" });
export const idOf = (name: string): string => formatTaskKey(keyOf(name));

/** The interval most tests run: 2026-11-28 at 02:00. */
export const DAY = "2026-11-28T02:00:00.000Z";
export const NEXT_DAY = "2026-11-29T02:00:00.000Z";
/** When events are recorded unless a test says otherwise (the helper's default). */
export const RECORDED = "2026-11-30T00:00:00.000Z";
export const RECORDED_MS = Date.parse(RECORDED);

/** A task's normalised declaration: daily at 02:00 from 2026-11-01, a noop. */
export function taskSpec(name = "t", overrides: Partial<TaskSpecInput> = {}): TaskSpec {
  return taskSpecSchema.parse({
    key: keyOf(name),
    cron: "0 2 * * *",
    startDate: "2026-11-01T00:00:00.000Z",
    operator: { type: "noop" },
    ...overrides,
  });
}

/** The task stream of `name`, declared at `logicalDate`. */
export function declaredTask(name = "t", logicalDate = DAY, spec = taskSpec(name)): Given[] {
  return on(taskStream(keyOf(name)), {
    type: "TaskDeclared",
    data: { key: keyOf(name), spec, logicalDate, nextRunDate: NEXT_DAY },
  });
}

/** An operator's reset of the task to `logicalDate` (a backfill when earlier). */
export function intervalReset(name: string, logicalDate: string): Given[] {
  return on(taskStream(keyOf(name)), {
    type: "IntervalReset",
    data: {
      key: keyOf(name),
      logicalDate,
      nextRunDate: NEXT_DAY,
      prevIntervalStart: null,
      reason: "operator",
    },
  });
}

/** The success path: the task moves from `logicalDate` to the next day. */
export function intervalCompleted(name: string, logicalDate = DAY): Given[] {
  return on(taskStream(keyOf(name)), {
    type: "IntervalCompleted",
    data: { key: keyOf(name), logicalDate, nextLogicalDate: NEXT_DAY, nextRunDate: NEXT_DAY },
  });
}

export const streamOf = (name = "t", logicalDate = DAY): string => instanceStream(keyOf(name), logicalDate);

/** `tok-<name>-<attempt>`: every attempt's token, at least the 8 characters tokens need. */
export const tokenOf = (name: string, attempt: number): string => `tok-${name}-${attempt}`;

export interface IntentOptions {
  readonly attempt?: number;
  readonly idempotent?: boolean;
  readonly leaseSeconds?: number;
  readonly runId?: string;
  readonly logicalDate?: string;
}

export function intended(name = "t", o: IntentOptions = {}): DomainEventOf<"DispatchIntended"> {
  const attempt = o.attempt ?? 1;
  return {
    type: "DispatchIntended",
    data: {
      key: keyOf(name),
      logicalDate: o.logicalDate ?? DAY,
      attempt,
      token: tokenOf(name, attempt),
      operator: { type: "noop" },
      idempotent: o.idempotent ?? false,
      leaseSeconds: o.leaseSeconds ?? 30,
      ...(o.runId ? { runId: o.runId } : {}),
    },
  };
}

export function started(name = "t", attempt = 1, workerId = "w-1"): DomainEventOf<"AttemptStarted"> {
  return {
    type: "AttemptStarted",
    data: { attempt, token: tokenOf(name, attempt), workerId, leaseExpiresAt: RECORDED },
  };
}

export function heartbeatExpired(name = "t", attempt = 1): DomainEventOf<"AttemptHeartbeatExpired"> {
  return {
    type: "AttemptHeartbeatExpired",
    data: { attempt, token: tokenOf(name, attempt), leaseExpiredAt: RECORDED, workerId: "w-1" },
  };
}

export function succeeded(name = "t", attempt = 1): DomainEventOf<"AttemptSucceeded"> {
  return {
    type: "AttemptSucceeded",
    data: { attempt, token: tokenOf(name, attempt), durationMs: 10, exitCode: 0, cacheHit: false },
  };
}

export function failed(name = "t", attempt = 1, retryAt?: string): DomainEventOf<"AttemptFailed"> {
  return {
    type: "AttemptFailed",
    data: {
      attempt,
      token: tokenOf(name, attempt),
      error: { kind: "exit_code", message: "exit code 1" },
      exitCode: 1,
      durationMs: 10,
      ...(retryAt ? { retryAt } : {}),
    },
  };
}

/** One instance stream of `name` at `DAY`: an intent, then what happened to its attempts. */
export function instance(name: string, ...events: DomainEvent[]): Given[] {
  return on(streamOf(name), ...events);
}

// ---- workflows and runs --------------------------------------------------------------------

export function declaredWorkflow(name: string, failurePolicy: "skip_dependents" | "fail_fast"): Given[] {
  const spec = workflowSpecSchema.parse({ name, project: "p", account: "a", failurePolicy });
  return on(workflowStream(name), { type: "WorkflowDeclared", data: { spec } });
}

export const runIdOf = (workflow: string): string => `${workflow}@${DAY}`;

export function runStarted(workflow: string, tasks: readonly string[]): Given[] {
  return on(runStream(runIdOf(workflow)), {
    type: "RunStarted",
    data: {
      runId: runIdOf(workflow),
      workflow,
      logicalDate: DAY,
      tasks: tasks.map(keyOf),
      trigger: "schedule",
      params: {},
    },
  });
}
