/*
 * Reads about a few tasks (`why`, `task`, a page of `tasks`) answered from the checkpoint's
 * index: only the tasks the answer looks at are decoded, then the events after the checkpoint
 * applied to them. The answer is the whole load's, exactly: the projection it is computed on
 * holds every task, child list and per-task record it looks up, and it is computed again with
 * more of them until it looks up none it lacks; if it goes through every task, or the tail of
 * the log is long, the whole projection is loaded as before.
 */

import { join } from "node:path";
import {
  ChildIndex,
  type LoggedEvent,
  type ProjectionSnapshot,
  SchedulerProjection,
  type TaskState,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { loadProjection } from "./projection-loader.js";
import { firstIdsAfter } from "./queries.js";
import { type IndexEntry, KeyIndexReader } from "./snapshot/key-index.js";
import { SNAPSHOT_FILE } from "./snapshot/store.js";

/** What a read is answered from: the projection, and the ids of the tasks in key order. */
export interface ReadView {
  readonly projection: SchedulerProjection;
  /** The ids of the first `count` tasks whose id sorts after `after`, in order. */
  idsAfter(after: string | undefined, count: number): string[];
}

export interface ReadAnswer<T> {
  readonly answer: T;
  /** How it was answered: from the index, or from the whole projection (and why). */
  readonly lazy: boolean;
  readonly why: string | null;
  /** Tasks and blocks of tasks decoded (lazy), and how many times the answer was computed. */
  readonly tasksRead: number;
  readonly blocksRead: number;
  readonly rounds: number;
}

export interface LazyReadOptions {
  /** More events than this after the checkpoint: the whole projection is loaded. */
  readonly maxTail?: number;
  /** More tasks than this looked at: the whole projection is loaded. */
  readonly maxTasks?: number;
}

const MAX_TAIL = 5000;
const MAX_TASKS = 20_000;
const MAX_ROUNDS = 12;

/** An error the answer itself is: thrown as the whole load's computation would throw it. */
class Answered {
  constructor(readonly error: unknown) {}
}

/** What one computation looked up that the partial projection did not hold. */
class Misses {
  readonly ids = new Set<string>();
  readonly children = new Set<string>();
  /** It went through a whole map: only the whole projection answers it. */
  whole = false;
}

/**
 * A map holding part of the projection's: a look-up of a key it does not know is noted (the
 * answer is computed again with it), a walk through it or its size makes the answer the whole
 * load's. Keys it knows: those fetched from the index (held or known absent), and those set.
 */
class PartialMap<V> extends Map<string, V> {
  constructor(
    private readonly known: ReadonlySet<string>,
    private readonly misses: Misses,
  ) {
    super();
  }

  private look(key: string): void {
    if (!this.known.has(key) && !super.has(key)) this.misses.ids.add(key);
  }

  override get(key: string): V | undefined {
    this.look(key);
    return super.get(key);
  }

  override has(key: string): boolean {
    this.look(key);
    return super.has(key);
  }

  override get size(): number {
    this.misses.whole = true;
    return super.size;
  }

  /** What it holds, without marking the answer as the whole map's. */
  held(): IterableIterator<[string, V]> {
    return super.entries();
  }

  override keys(): MapIterator<string> {
    this.misses.whole = true;
    return super.keys();
  }

  override values(): MapIterator<V> {
    this.misses.whole = true;
    return super.values();
  }

  override entries(): MapIterator<[string, V]> {
    this.misses.whole = true;
    return super.entries();
  }

  override [Symbol.iterator](): MapIterator<[string, V]> {
    this.misses.whole = true;
    return super.entries();
  }

  override forEach(callback: (value: V, key: string, map: Map<string, V>) => void, thisArg?: unknown): void {
    this.misses.whole = true;
    super.forEach(callback, thisArg);
  }
}

/** The index of children, whole only for the parents in `complete`. */
class PartialChildren extends ChildIndex {
  constructor(
    private readonly complete: ReadonlySet<string>,
    private readonly misses: Misses,
  ) {
    super();
  }

  override get size(): number {
    this.misses.whole = true;
    return super.size;
  }

  override of(parent: string): Iterable<string> {
    if (!this.complete.has(parent)) this.misses.children.add(parent);
    return super.of(parent);
  }

  override count(parent: string): number {
    if (!this.complete.has(parent)) this.misses.children.add(parent);
    return super.count(parent);
  }
}

/**
 * Answers `ask` at the log's head. From the checkpoint's index when it has one that belongs to
 * this log and the tail after it is short: `ask` is computed on a projection of the tasks it
 * looked up so far (none at first), then again with those it lacked, until it lacks none; it
 * must read the projection only (it may run several times). Otherwise from the whole
 * projection, as `loadProjection` gives it.
 */
export async function answerAtHead<T>(
  log: EventLog,
  dir: string,
  ask: (view: ReadView) => T | Promise<T>,
  options: LazyReadOptions = {},
): Promise<ReadAnswer<T>> {
  const lazy = await tryLazy(log, dir, ask, options);
  if (typeof lazy !== "string") return lazy;
  const { projection } = await loadProjection(log, dir);
  const view: ReadView = {
    projection,
    idsAfter: (after, count) => firstIdsAfter(projection.tasks.keys(), after, count),
  };
  const answer = await ask(view);
  return { answer, lazy: false, why: lazy, tasksRead: projection.tasks.size, blocksRead: 0, rounds: 1 };
}

/** The answer from the index, or why it was not given from it. */
async function tryLazy<T>(
  log: EventLog,
  dir: string,
  ask: (view: ReadView) => T | Promise<T>,
  options: LazyReadOptions,
): Promise<ReadAnswer<T> | string> {
  let index: KeyIndexReader;
  try {
    index = KeyIndexReader.open(join(dir, SNAPSHOT_FILE));
  } catch (error) {
    return `no index: ${(error as Error).message}`;
  }
  try {
    const header = JSON.parse(index.headerText) as Record<string, unknown>;
    const position = BigInt(header.position as string);
    if (position >= 0n) {
      const [at] = await log.readAllStored({ fromPosition: position, maxCount: 1 });
      if (!at || at.position !== position || at.metadata.hash !== header.headHash)
        return "the snapshot does not match this log";
    }
    const maxTail = options.maxTail ?? MAX_TAIL;
    const tail = (await log.readAll({ fromPosition: position + 1n, maxCount: maxTail + 1 })) as LoggedEvent[];
    if (tail.length > maxTail) return `more than ${maxTail} events after the checkpoint`;
    const maxTasks = options.maxTasks ?? MAX_TASKS;
    // Ids whose entries were fetched, with what the index holds of them (null: nothing).
    const entries = new Map<string, IndexEntry | null>();
    const childrenOf = new Set<string>();
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const misses = new Misses();
      const { projection, places } = partialProjection(index, header, entries, childrenOf, misses);
      for (const e of tail) projection.apply(e);
      const tasks = projection.tasks as PartialMap<TaskState>;
      const view: ReadView = {
        projection,
        idsAfter: (after, count) => {
          const ids = index.idsAfter(after, count);
          // Tasks first declared after the checkpoint: the partial map holds all of them once
          // the tail's look-ups of them are answered.
          for (const [id] of tasks.held())
            if (entries.get(id) === null && (after === undefined || id > after)) ids.push(id);
          ids.sort();
          ids.length = Math.min(ids.length, count);
          // The page's tasks are each looked up next: all of them fetched in one round, not one
          // a round (a row of a task not held yet stops the computation).
          for (const id of ids) tasks.has(id);
          return ids;
        },
      };
      let answer: T | undefined;
      let failed: { error: unknown } | null = null;
      try {
        answer = await ask(view);
      } catch (error) {
        // Thrown for lack of a task not looked up yet, or the answer itself (a task unknown).
        failed = { error };
      }
      if (misses.whole) return "the answer needs every task";
      if (misses.ids.size === 0 && misses.children.size === 0) {
        if (failed) throw new Answered(failed.error);
        return {
          answer: answer as T,
          lazy: true,
          why: null,
          tasksRead: places,
          blocksRead: index.blocksRead,
          rounds: round,
        };
      }
      for (const id of misses.ids) if (!entries.has(id)) entries.set(id, index.entry(id));
      for (const id of misses.children) {
        if (!entries.has(id)) entries.set(id, index.entry(id));
        childrenOf.add(id);
      }
      if (entries.size > maxTasks) return `more than ${maxTasks} tasks looked at`;
    }
    return `more than ${MAX_ROUNDS} rounds of look-ups`;
  } catch (error) {
    if (error instanceof Answered) throw error.error;
    return `unreadable index: ${(error as Error).message}`;
  } finally {
    index.close();
  }
}

/**
 * The projection at the checkpoint's position holding the tasks of `entries` and every child of
 * `childrenOf` (in the order of the file, as the whole read holds them), their per-task records,
 * and every other record of the file.
 */
function partialProjection(
  index: KeyIndexReader,
  header: Record<string, unknown>,
  entries: ReadonlyMap<string, IndexEntry | null>,
  childrenOf: ReadonlySet<string>,
  misses: Misses,
): { projection: SchedulerProjection; places: number } {
  const places = new Set<number>();
  for (const e of entries.values()) if (e && e.place >= 0) places.add(e.place);
  for (const id of childrenOf) for (const p of entries.get(id)?.children ?? []) places.add(p);
  const known = new Set(entries.keys());
  const tasks = new PartialMap<TaskState>(known, misses);
  const children = new PartialChildren(childrenOf, misses);
  for (const place of [...places].sort((a, b) => a - b)) {
    const task = index.taskAt(place);
    tasks.set(task.id, task);
    for (const p of task.parents) children.add(`${p.project}/${p.account}/${p.name}/${p.partition}`, task.id);
  }
  const durations = new PartialMap<number[]>(known, misses);
  const cacheKeys = new PartialMap<string[]>(known, misses);
  for (const [id, e] of entries) {
    if (e?.durations) durations.set(id, [...e.durations]);
    if (e?.cacheKeys) cacheKeys.set(id, [...e.cacheKeys]);
  }
  const snapshot = { ...JSON.parse(index.headerText) } as Record<string, unknown>;
  const counts = header.counts as Record<string, number>;
  let line = 0;
  for (const list of LISTS) {
    const records: unknown[] = [];
    for (let i = 0; i < (counts[list] ?? 0); i++) {
      const text = index.listLines[line++];
      if (text === undefined) throw new Error(`the file ends within its ${list}`);
      records.push(JSON.parse(text));
    }
    snapshot[list] = records;
  }
  snapshot.cacheKeys = [];
  snapshot.durations = [];
  const projection = SchedulerProjection.fromSnapshot({
    ...(snapshot as unknown as ProjectionSnapshot),
    tasks,
    children,
  });
  // The per-task records, as partial as the tasks.
  Object.assign(projection, { durations, cacheKeys });
  return { projection, places: places.size };
}

/** The lists of the file before its per-task records, in its order. */
const LISTS = [
  "instances",
  "connections",
  "connectionRevisions",
  "workflows",
  "workflowRevisions",
  "runs",
  "alerts",
] as const;
