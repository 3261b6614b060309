import {
  ChronologError,
  type ChronologErrorType,
  type DomainEvent,
  evolveInstance,
  type InstanceState,
  type LoggedEvent,
  SchedulerProjection,
} from "@chronolog/core";
import { expect } from "vitest";

/**
 * Given / when / then for the core's deciders: given these events (folded into the state the
 * decider reads), when this command or this `now`, then this decision, these events, or this
 * typed error. One spec per decider, e.g.
 *
 *   const spec = specification({ fold: projectionOf, decide: (p, now: number) => decideTask(...) });
 *   spec.given(on("task-p/a/x/ALL", declared(...))).when(NOW).then({ kind: "not_due", ... });
 */

/** One event of a history: the stream it is in, and when it was recorded (default: a fixed instant). */
export type Given = DomainEvent & { readonly streamId: string; readonly recordedAt?: string };

/** Events of one stream, in order. */
export function on(streamId: string, ...events: DomainEvent[]): Given[] {
  return events.map((e) => ({ ...e, streamId }));
}

/** The same events, recorded at `recordedAt` (an ISO instant): for deciders that read when. */
export function at(recordedAt: string, ...histories: ReadonlyArray<Given | readonly Given[]>): Given[] {
  return histories.flat().map((g) => ({ ...g, recordedAt }));
}

/** The history as the log would record it: dense positions, per-stream revisions from 0. */
export function recorded(history: readonly Given[]): LoggedEvent[] {
  const revisions = new Map<string, bigint>();
  return history.map((g, i) => {
    const revision = (revisions.get(g.streamId) ?? -1n) + 1n;
    revisions.set(g.streamId, revision);
    const { streamId, recordedAt, ...event } = g;
    return {
      ...(event as DomainEvent),
      streamId,
      revision,
      position: BigInt(i),
      metadata: { recordedAt: recordedAt ?? "2026-11-30T00:00:00.000Z" },
    };
  });
}

/** The scheduler projection folded from a history. */
export function projectionOf(history: readonly Given[]): SchedulerProjection {
  const p = new SchedulerProjection();
  for (const e of recorded(history)) p.apply(e);
  return p;
}

/**
 * One attempt stream folded from a history: all its events must be of that stream, or name the
 * stream to fold from a larger history (its events keep their positions in the whole log).
 */
export function instanceOf(history: readonly Given[], stream?: string): InstanceState | undefined {
  let state: InstanceState | undefined;
  for (const e of recorded(history)) {
    if (stream !== undefined && e.streamId !== stream) continue;
    state = evolveInstance(state, e, {
      revision: e.revision,
      position: e.position,
      recordedAt: e.metadata.recordedAt,
      streamId: e.streamId,
    });
  }
  return state;
}

export interface Then<Out> {
  /** The decision equals `expected` (deeply). */
  then(expected: Out): void;
  /** The decision passes `check` (for decisions with tokens, times or long texts). */
  thenMatches(check: (actual: Out) => void): void;
  /** The decider refuses with a typed error of `type` (whose message matches `message`, if given). */
  thenThrows(type: ChronologErrorType, message?: RegExp): void;
}

export interface Specification<State, In, Out> {
  given(...histories: ReadonlyArray<Given | readonly Given[]>): {
    when(input: In): Then<Out>;
    /** The state the decider reads, folded from the history (to check the fold itself). */
    state(): State;
  };
}

export function specification<State, In, Out>(decider: {
  readonly fold: (history: readonly Given[]) => State;
  readonly decide: (state: State, input: In) => Out;
}): Specification<State, In, Out> {
  return {
    given: (...histories) => {
      const history = histories.flat() as Given[];
      return {
        state: () => decider.fold(history),
        when: (input) => {
          const run = () => decider.decide(decider.fold(history), input);
          return {
            // The given/when/then vocabulary: a Then is asserted on, never awaited.
            // biome-ignore lint/suspicious/noThenProperty: the helper's own API
            then: (expected) => expect(run()).toEqual(expected),
            thenMatches: (check) => check(run()),
            thenThrows: (type, message) => {
              let thrown: unknown;
              try {
                run();
              } catch (error) {
                thrown = error;
              }
              expect(thrown, "the decider should have refused").toBeInstanceOf(ChronologError);
              expect((thrown as ChronologError).type).toBe(type);
              if (message) expect((thrown as Error).message).toMatch(message);
            },
          };
        },
      };
    },
  };
}
