import {
  connectionStream,
  type DomainEvent,
  foldInstance,
  type InstanceState,
  instanceStream,
  intentEvent,
  isTerminal,
  type OperatorSpec,
  type SchedulerProjection,
  type TaskState,
  taskStream,
  unreachable,
} from "@chronolog/core";
import {
  type AppendResult,
  type EventLog,
  type StreamCheck,
  type StreamWrite,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import type { RunCommand } from "@chronolog/worker";
import type { ConnectionSlots } from "./admission/connection-slots.js";
import { AppendChain, followed } from "./append-chain.js";
import type { Command, CommandOutcome, Decided } from "./command.js";
import { renderCacheKey, renderEnvironment, renderPayload } from "./payload.js";

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

/** Most intervals have no attempt stream yet: the state a first intent is decided on. */
const NO_STREAM: IntentState = Object.freeze({ inst: undefined, revision: "no_stream" });

/**
 * Writes DispatchIntended, durably, before anything is sent: renders the payload, names the
 * attempt and its token, takes the connection's slot in the same append, and records a cache
 * hit instead when an earlier attempt with the same cache key succeeded.
 */
export class IntentWriter {
  constructor(
    private readonly log: EventLog,
    readonly projection: SchedulerProjection,
    private readonly connections: ConnectionSlots,
    readonly newToken: () => string,
    /** Where the scheduler's appends will leave the log: an intent moves it on (see AppendChain). */
    private readonly chain: AppendChain = new AppendChain(),
  ) {}

  /**
   * The command that writes `task`'s next attempt's intent (its first, or `retry`'s next), for
   * the command handler; `countedAt` is the connection's count. A payload that does not render
   * is said at once, with nothing to write.
   */
  prepare(
    task: TaskState,
    retry: InstanceState | null,
    countedAt?: bigint,
  ): IntentCommand | { readonly kind: "render_failed"; readonly error: Error } {
    let operator: OperatorSpec;
    let cacheKey: string | undefined;
    let env: Record<string, string> | undefined;
    try {
      operator = this.render(task);
      cacheKey = this.cacheKey(task);
      env = renderEnvironment(task, this.projection);
    } catch (error) {
      return { kind: "render_failed", error: error as Error };
    }
    return new IntentCommand(this, task, retry, countedAt, operator, cacheKey, env);
  }

  /** What became of the intent, from the handler's outcome (or the error it failed with). */
  outcome(
    command: IntentCommand,
    outcome: CommandOutcome<IntentOutcome | null> | { error: unknown },
  ): IntentOutcome {
    if ("error" in outcome && !("kind" in outcome)) {
      if (outcome.error instanceof WrongExpectedRevisionError)
        return this.conflict(outcome.error, command.connection);
      throw outcome.error;
    }
    switch (outcome.kind) {
      case "unchanged":
        return outcome.result ?? { kind: "conflict" };
      case "conflict":
        return this.conflict(outcome.error, command.connection);
      case "written": {
        const position = (outcome.results[0] as AppendResult).position;
        // (The command for the worker is made once the intent is durable: nothing more is held meanwhile.)
        if (command.hit) return { kind: "cache_hit", position };
        return { kind: "dispatch", command: command.toRun(), position };
      }
      default:
        return unreachable(outcome);
    }
  }

  /**
   * The append of an intent that takes no connection's slot, in the chain of the scheduler's
   * appends (its task is in flight from its admission: no success starts it meanwhile).
   */
  appendIntent(writes: readonly StreamWrite[], task: StreamCheck): Promise<readonly AppendResult[]> {
    // (An intent's decision is one write, to its attempt stream.)
    const w = writes[0] as StreamWrite;
    const appended = this.log
      .append(w.streamId, w.events, { expectedRevision: w.expectedRevision, checks: [task] })
      .then((r) => [r]);
    return followed(appended, this.chain.queued(null, w.events.length));
  }

  /** The append of an intent that takes its connection's slot (others take the handler's own). */
  appendTaking(
    c: IntentCommand,
    connection: string,
    writes: readonly StreamWrite[],
    task: StreamCheck,
  ): Promise<readonly AppendResult[]> {
    // (An intent's decision is one write, to its attempt stream.)
    const w = writes[0] as StreamWrite;
    return this.connections
      .appendTaking(
        connection,
        c.countedAt,
        c.stream,
        w.events as DomainEvent[],
        w.expectedRevision as bigint | "no_stream",
        {
          stream: c.stream,
          attempt: c.attempt,
          token: c.token,
        },
        task,
      )
      .then((r) => [r as AppendResult]);
  }

  /** The attempt stream as the log holds it, when the compare-and-set said it exists. */
  async readStream(task: TaskState, stream: string): Promise<IntentState> {
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

/**
 * One intent as a command for the handler: decided on the attempt stream as the projection
 * knows it (most intervals have none yet: compare-and-set says otherwise), and once more on the
 * stream as the log holds it when that compare-and-set fails (an interval run before, now
 * backfilled). One object per intent, with no closures: the scheduler writes thousands a second.
 */
export class IntentCommand implements Command<IntentState, IntentOutcome | null> {
  readonly stream: string;
  readonly connection: string | undefined;
  readonly hit: boolean;
  private readonly known: InstanceState | undefined;
  attempt = 0;
  token = "";

  constructor(
    private readonly writer: IntentWriter,
    private readonly task: TaskState,
    retry: InstanceState | null,
    readonly countedAt: bigint | undefined,
    private readonly operator: OperatorSpec,
    private readonly cacheKey: string | undefined,
    /** The environment a shell task is given (`renderEnvironment`). */
    private readonly env: Readonly<Record<string, string>> | undefined,
  ) {
    this.stream = instanceStream(task.key, task.logicalDate);
    this.connection = task.spec.connection;
    this.hit = cacheKey !== undefined && writer.projection.hasCacheKey(task.id, cacheKey);
    this.known = retry ?? writer.projection.instances.get(this.stream);
  }

  get name(): string {
    return `dispatch ${this.task.id} ${this.task.logicalDate}`;
  }

  read(fresh: boolean): IntentState | Promise<IntentState> {
    // A stream held with no attempt may have had some before the projection let it go (taken up
    // again by a skip, a closing or a mark): the log says which number comes next.
    if (fresh || (this.known !== undefined && this.known.attempts.length === 0))
      return this.writer.readStream(this.task, this.stream);
    return this.known ? { inst: this.known, revision: this.known.revision } : NO_STREAM;
  }

  decide(s: IntentState): Decided<IntentOutcome | null> {
    if (s.stop) return { writes: [], result: s.stop };
    const { task, operator, cacheKey } = this;
    this.attempt = (s.inst?.attempts.at(-1)?.attempt ?? 0) + 1;
    this.token = this.writer.newToken();
    const events: DomainEvent[] = [intentEvent(task, this.attempt, this.token, operator, cacheKey)];
    if (this.hit)
      events.push({
        type: "AttemptSucceeded",
        data: {
          attempt: this.attempt,
          token: this.token,
          durationMs: 0,
          exitCode: null,
          cacheHit: true,
          cacheKey,
        },
      });
    return { writes: [{ streamId: this.stream, events, expectedRevision: s.revision }], result: null };
  }

  /**
   * The intent's append: with its connection's slot taken, if it takes one; made only if the task
   * stream is still where it was decided on (a backfill or rerun that moved the task, or a
   * declaration that changed it, written meanwhile refuses it: see onConflict).
   */
  append(writes: readonly StreamWrite[]): Promise<readonly AppendResult[]> {
    const conn = this.connection;
    const task = { streamId: taskStream(this.task.key), expectedRevision: this.task.revision };
    if (conn && !this.hit) return this.writer.appendTaking(this, conn, writes, task);
    return this.writer.appendIntent(writes, task);
  }

  /** What a worker is sent once the intent is durable. */
  toRun(): RunCommand {
    return runCommand(this.task, this.attempt, this.token, this.operator, this.env);
  }

  /**
   * Read again, once: the attempt stream existed (an interval run before, now backfilled), to go
   * on from it; or the task moved since it was decided on, which the read finds (look_again:
   * decided anew once the projection has seen the move).
   */
  onConflict(error: WrongExpectedRevisionError, tries: number): "retry" | "give_up" {
    if (tries !== 1) return "give_up";
    if (error.streamId === this.stream) return this.known ? "give_up" : "retry";
    return error.streamId === taskStream(this.task.key) ? "retry" : "give_up";
  }
}

/** What a worker is sent once the intent is durable. */
export function runCommand(
  task: TaskState,
  attempt: number,
  token: string,
  operator: OperatorSpec,
  env: Readonly<Record<string, string>> | undefined,
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
    // A task of a worker queue runs only on a worker serving it.
    ...(task.spec.queue !== undefined ? { queue: task.spec.queue } : {}),
    ...(env ? { env } : {}),
    // Its secrets by reference: the worker resolves them (their values never pass here).
    ...(task.spec.secrets && task.spec.operator.type !== "noop" ? { secrets: task.spec.secrets } : {}),
    // A task that is not idempotent runs only once its start is on record.
    ...(task.spec.idempotent ? {} : { awaitProceed: true }),
  };
}
