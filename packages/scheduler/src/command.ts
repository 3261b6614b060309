import { ChronologError } from "@chronolog/core";
import {
  type AppendResult,
  type EventLog,
  type StreamWrite,
  WrongExpectedRevisionError,
} from "@chronolog/log";

/** A command that kept losing its compare-and-set to other writers, however often it decided again. */
export class ConflictRetriesExhaustedError extends ChronologError {
  readonly type = "conflict_retries_exhausted" as const;
  constructor(
    readonly command: string,
    readonly tries: number,
    readonly last: WrongExpectedRevisionError,
  ) {
    super(`${command}: still in conflict after ${tries} tries (${last.message})`, { cause: last });
    this.name = "ConflictRetriesExhaustedError";
  }
}

/** What a decision writes (nothing, when `writes` is empty), and what it answers its caller. */
export interface Decided<R> {
  readonly writes: readonly StreamWrite[];
  readonly result: R;
}

export interface Command<S, R> {
  /** Names the command in errors, e.g. `pause p/a/x/ALL`. */
  readonly name: string;
  /**
   * The state the decision is made on. `fresh` is false the first time (the projection in
   * memory may do) and true after a conflict (read what the log holds now).
   */
  read(fresh: boolean): S | Promise<S>;
  /** The pure decision: the writes, each with the revision it expects, and the answer. */
  decide(state: S): Decided<R>;
  /** How the writes are appended (default: one atomic append of them all). */
  append?(writes: readonly StreamWrite[]): Promise<readonly AppendResult[]>;
  /**
   * A conflict: "retry" decides again on fresh state; "give_up" returns it to the caller (who
   * looks again later, as a scheduler pass does). Default: give up.
   */
  onConflict?(error: WrongExpectedRevisionError, tries: number): "retry" | "give_up";
  /**
   * Any other refusal of the append (the log moved past an expected head, a write it does not
   * take): "retry" decides again on fresh state, as after a conflict; "throw" (the default)
   * fails with the error.
   */
  onRefused?(error: unknown, tries: number): "retry" | "throw";
  /** Retries at most this many times, then fails with ConflictRetriesExhaustedError (default 5). */
  readonly maxRetries?: number;
}

export type CommandOutcome<R> =
  | { readonly kind: "written"; readonly result: R; readonly results: readonly AppendResult[] }
  | { readonly kind: "unchanged"; readonly result: R }
  | { readonly kind: "conflict"; readonly error: WrongExpectedRevisionError };

/**
 * The thin shell around a decision: read, decide, append with the expected revisions, and on a
 * compare-and-set conflict either decide again on fresh state or give up with the conflict. Any
 * other error (a refusal the decision throws, a log failure) is the caller's.
 */
export function handleCommand<S, R>(log: EventLog, command: Command<S, R>): Promise<CommandOutcome<R>> {
  let read: S | Promise<S>;
  try {
    read = command.read(false);
  } catch (error) {
    return Promise.reject(error);
  }
  // (A state read from memory is decided at once: the scheduler's commands cost no extra turn.)
  if (read instanceof Promise) return read.then((state) => attempt(log, command, state, 0));
  return attempt(log, command, read, 0);
}

/** One try: decide on `state` and append; a conflict goes to `conflicted`. */
function attempt<S, R>(
  log: EventLog,
  command: Command<S, R>,
  state: S,
  tries: number,
): Promise<CommandOutcome<R>> {
  let result: R;
  let appended: Promise<readonly AppendResult[]>;
  try {
    const decided = command.decide(state);
    result = decided.result;
    if (decided.writes.length === 0) return Promise.resolve({ kind: "unchanged", result });
    const [only] = decided.writes;
    if (!command.append && decided.writes.length === 1 && only)
      // One write: appended as it is, its result wrapped here (no promise more per command).
      return log.append(only.streamId, only.events, { expectedRevision: only.expectedRevision }).then(
        (r) => ({ kind: "written", result, results: [r] }),
        (error: unknown) => conflicted(log, command, error, tries),
      );
    appended = command.append ? command.append(decided.writes) : log.appendMany(decided.writes);
  } catch (error) {
    return Promise.reject(error);
  }
  return appended.then(
    (results) => ({ kind: "written", result, results }),
    (error: unknown) => conflicted(log, command, error, tries),
  );
}

/** A failed append: decide again on fresh state, give the conflict back, or fail. */
async function conflicted<S, R>(
  log: EventLog,
  command: Command<S, R>,
  error: unknown,
  tries: number,
): Promise<CommandOutcome<R>> {
  if (!(error instanceof WrongExpectedRevisionError)) {
    if ((command.onRefused?.(error, tries + 1) ?? "throw") === "throw" || tries >= (command.maxRetries ?? 5))
      throw error;
    return attempt(log, command, await command.read(true), tries + 1);
  }
  if ((command.onConflict?.(error, tries + 1) ?? "give_up") === "give_up") return { kind: "conflict", error };
  if (tries >= (command.maxRetries ?? 5))
    throw new ConflictRetriesExhaustedError(command.name, tries + 1, error);
  return attempt(log, command, await command.read(true), tries + 1);
}
