import {
  connectionStream,
  type DomainEvent,
  foldInstance,
  type InstanceState,
  instanceStream,
  isTerminal,
  type OperatorSpec,
  runIdOf,
  type SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import { type EventLog, WrongExpectedRevisionError } from "@chronolog/log";
import type { RunCommand } from "@chronolog/worker";
import type { ConnectionSlots } from "./admission/connection-slots.js";
import { handleCommand } from "./command.js";
import { renderCacheKey, renderPayload } from "./payload.js";

/*
 * The intent writer: a task's next attempt announced by a durable DispatchIntended before any
 * worker hears of it, with its rendered payload, its token and its connection slot.
 */

/** What became of one intent. */
export type IntentOutcome =
  /** Durable: hand `command` to a worker. */
  | { readonly kind: "dispatch"; readonly command: RunCommand; readonly position: bigint }
  /** An earlier success with the same cache key: recorded as a cache hit, nothing to run. */
  | { readonly kind: "cache_hit"; readonly position: bigint }
  /** The payload does not render: the task is held, with the message. */
  | { readonly kind: "render_failed"; readonly error: Error }
  /** The interval's attempt stream holds an attempt still in flight: never start a second. */
  | { readonly kind: "in_flight"; readonly message: string }
  /** The interval ran before, decided elsewhere: look again once the projection reaches `until`. */
  | { readonly kind: "look_again"; readonly until: bigint }
  /** Another writer wrote the instance or task stream first: decide again. */
  | { readonly kind: "conflict" }
  /** Another scheduler took slots of the connection since they were counted. */
  | { readonly kind: "slot_conflict"; readonly seenAfter: boolean };

/** The state an intent is decided on: the interval's attempt stream as known, and its revision. */
interface IntentState {
  readonly inst: InstanceState | undefined;
  readonly revision: bigint | "no_stream";
  /** Set when reading the stream showed the intent must not be written. */
  readonly stop?: IntentOutcome;
}

/**
 * Writes DispatchIntended, durably, before anything is sent: renders the payload, names the
 * attempt and its token, takes the connection's slot in the same append, and records a cache
 * hit instead when an earlier attempt with the same cache key succeeded.
 */
export class IntentWriter {
  constructor(
    private readonly log: EventLog,
    private readonly projection: SchedulerProjection,
    private readonly connections: ConnectionSlots,
    private readonly newToken: () => string,
  ) {}

  /** The intent of `task`'s next attempt (its first, or `retry`'s next); `countedAt`: the connection's count. */
  async write(task: TaskState, retry: InstanceState | null, countedAt?: bigint): Promise<IntentOutcome> {
    let operator: OperatorSpec;
    let cacheKey: string | undefined;
    try {
      operator = this.render(task);
      cacheKey = this.cacheKey(task);
    } catch (error) {
      return { kind: "render_failed", error: error as Error };
    }
    const stream = instanceStream(task.key, task.logicalDate);
    const conn = task.spec.connection;
    const hit = cacheKey !== undefined && this.projection.hasCacheKey(task.id, cacheKey);
    let token = "";
    let attemptNo = 0;
    // Most intervals have no attempt stream yet: assume so, and let compare-and-set say otherwise.
    const known = retry ?? this.projection.instances.get(stream);
    try {
      const outcome = await handleCommand<
        IntentState,
        { stop: IntentOutcome } | { command: RunCommand | null }
      >(this.log, {
        name: `dispatch ${task.id} ${task.logicalDate}`,
        read: (fresh): IntentState | Promise<IntentState> =>
          fresh
            ? this.readStream(task, stream)
            : { inst: known, revision: known ? known.revision : "no_stream" },
        decide: (s) => {
          if (s.stop) return { writes: [], result: { stop: s.stop } };
          const attempt = (s.inst?.attempts.at(-1)?.attempt ?? 0) + 1;
          token = this.newToken();
          attemptNo = attempt;
          const events: DomainEvent[] = [intentEvent(task, attempt, token, operator, cacheKey)];
          if (hit)
            events.push({
              type: "AttemptSucceeded",
              data: { attempt, token, durationMs: 0, exitCode: null, cacheHit: true, cacheKey },
            });
          return {
            writes: [{ streamId: stream, events, expectedRevision: s.revision }],
            result: { command: hit ? null : runCommand(task, attempt, token, operator) },
          };
        },
        ...(conn && !hit
          ? {
              append: async (writes) => {
                const w = writes[0];
                if (!w) return [];
                const r = await this.connections.appendTaking(
                  conn,
                  countedAt,
                  stream,
                  [...w.events] as DomainEvent[],
                  w.expectedRevision as bigint | "no_stream",
                  { stream, attempt: attemptNo, token },
                );
                return [r as never];
              },
            }
          : {}),
        // The stream existed (an interval run before, now backfilled): read it and go on from it, once.
        onConflict: (error, tries) =>
          error.streamId === stream && !known && tries === 1 ? "retry" : "give_up",
      });
      switch (outcome.kind) {
        case "unchanged":
          return "stop" in outcome.result ? outcome.result.stop : { kind: "conflict" };
        case "conflict":
          return this.conflict(outcome.error, conn);
        case "written": {
          const position = (outcome.results[0] as { position: bigint }).position;
          const command = "command" in outcome.result ? outcome.result.command : null;
          return command ? { kind: "dispatch", command, position } : { kind: "cache_hit", position };
        }
        default: {
          const never: never = outcome;
          return never;
        }
      }
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) return this.conflict(error, conn);
      throw error;
    }
  }

  /** The attempt stream as the log holds it, when the compare-and-set said it exists. */
  private async readStream(task: TaskState, stream: string): Promise<IntentState> {
    const events = await this.log.readStream(stream);
    const inst = foldInstance(events);
    if (inst && !isTerminal(inst))
      return {
        inst,
        revision: inst.revision,
        stop: {
          kind: "in_flight",
          message: `attempt ${inst.attempts.at(-1)?.attempt} of ${task.logicalDate} is still in flight`,
        },
      };
    // A finished attempt is an earlier run's only if the task was moved to this interval (a
    // backfill, a rerun) after it ended. Otherwise it is this interval's own outcome, decided by
    // another scheduler (or before a restart) and not yet seen here.
    const newer = await this.log.readStream(taskStream(task.key), { fromRevision: task.revision + 1n });
    const ended = events.at(-1)?.position ?? -1n;
    if (newer.length > 0 || (inst && inst.dispatchedAt > task.movedAt))
      return {
        inst,
        revision: "no_stream",
        stop: { kind: "look_again", until: newer.at(-1)?.position ?? ended },
      };
    // A stream holding only rejected reports folds to nothing: go on from its revision.
    return { inst, revision: events.at(-1)?.revision ?? "no_stream" };
  }

  private conflict(error: WrongExpectedRevisionError, conn: string | undefined): IntentOutcome {
    if (conn && error.streamId === connectionStream(conn)) {
      // Another scheduler took slots of the connection since this one counted: count again
      // once its take is seen here.
      this.connections.forgetTake(conn);
      const seen = this.projection.connectionRevisions.get(conn) ?? -1n;
      return { kind: "slot_conflict", seenAfter: error.actual !== "no_stream" && seen < error.actual };
    }
    return { kind: "conflict" };
  }

  /** The operator with its templates rendered. */
  render(task: TaskState): OperatorSpec {
    return renderPayload(task, this.projection);
  }

  cacheKey(task: TaskState): string | undefined {
    return renderCacheKey(task, this.projection);
  }
}

/** The intent to run `attempt` of the task's current interval. */
export function intentEvent(
  task: TaskState,
  attempt: number,
  token: string,
  operator: OperatorSpec,
  cacheKey: string | undefined,
): DomainEvent {
  const conn = task.spec.connection;
  return {
    type: "DispatchIntended",
    data: {
      key: task.key,
      logicalDate: task.logicalDate,
      attempt,
      token,
      ...(conn ? { connection: conn } : {}),
      operator: operator as unknown as Record<string, unknown>,
      idempotent: task.spec.idempotent,
      leaseSeconds: task.spec.leaseSeconds,
      ...(task.spec.workflow ? { runId: runIdOf(task.spec.workflow, task.logicalDate) } : {}),
      ...(cacheKey !== undefined ? { cacheKey } : {}),
    },
  };
}

/** What a worker is sent once the intent is durable. */
export function runCommand(
  task: TaskState,
  attempt: number,
  token: string,
  operator: OperatorSpec,
): RunCommand {
  return {
    kind: "run",
    instanceStream: instanceStream(task.key, task.logicalDate),
    taskKey: task.id,
    logicalDate: task.logicalDate,
    attempt,
    token,
    operator: operator as unknown as Record<string, unknown>,
    leaseSeconds: task.spec.leaseSeconds,
    // A task that is not idempotent runs only once its start is on record.
    ...(task.spec.idempotent ? {} : { awaitProceed: true }),
  };
}
