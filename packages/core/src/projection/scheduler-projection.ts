import { type AlertState, alertDone, evolveAlert } from "../alert/alert.js";
import { recordDuration } from "../deadline/durations.js";
import type { DomainEvent } from "../events/catalog.js";
import { countsForTask, evolveInstance, type InstanceState, isTerminal } from "../instance/state.js";
import { formatTaskKey, type TaskKey } from "../keys.js";
import { evolveRun, type RunState, runIdOf, withOutcome, withoutOutcome } from "../run/state.js";
import type { ConnectionSpec, WorkflowSpec } from "../spec.js";
import { instanceStream, streamCategory } from "../streams.js";
import { PriorityWeights } from "../task/priority.js";
import { type DeclaredSpec, evolveTask, type TaskState } from "../task/state.js";
import { IdMap } from "./id-map.js";
import { WorkersProjection, type WorkersSnapshot } from "./workers.js";

/** An event as the projection needs it: any recorded event of the log has this shape. */
export type LoggedEvent = DomainEvent & {
  readonly streamId: string;
  readonly revision: bigint;
  readonly position: bigint;
  readonly metadata: { readonly recordedAt: string; readonly actor?: string };
};

/** What one event changed, so the scheduler wakes only what it concerns. */
export interface Touched {
  readonly task?: string;
  readonly instance?: string;
  readonly connection?: string;
  readonly run?: string;
  /** An alert's stream. */
  readonly alert?: string;
}

/** Finished runs kept in memory for `chronolog runs`; older ones are read from their streams. */
export const RECENT_FINISHED_RUNS = 1000;

/** Delivered (or given up) alerts remembered, besides every one still being delivered. */
export const RECENT_DONE_ALERTS = 1000;

/** Cache keys remembered per task. */
export const CACHE_KEYS_PER_TASK = 1000;

/**
 * The scheduler's view of the log: every task, the instances still in play (not those long
 * finished, so memory and each pass cost O(active work)), connections and workflows.
 * A pure fold: the same events in the same order give the same state.
 */
export class SchedulerProjection {
  readonly tasks: Map<string, TaskState>;
  readonly instances = new Map<string, InstanceState>();
  readonly connections = new Map<string, ConnectionSpec>();
  /** connection -> revision of its stream (the expected revision of the next slot taken). */
  readonly connectionRevisions = new Map<string, bigint>();
  readonly workflows = new Map<string, WorkflowSpec>();
  /** workflow -> revision of its stream (the expected revision of its next declaration). */
  readonly workflowRevisions = new Map<string, bigint>();
  /** task id -> cache keys of its successful attempts (the most recent CACHE_KEYS_PER_TASK). */
  readonly cacheKeys = new Map<string, string[]>();
  /** task id -> durations in ms of its recent successful attempts (DURATIONS_KEPT at most). */
  readonly durations = new Map<string, number[]>();
  /** Runs in progress, and the most recent finished ones (insertion order: oldest first). */
  readonly runs = new Map<string, RunState>();
  /** Alerts being delivered, and the most recent done ones (insertion order: oldest first). */
  readonly alerts = new Map<string, AlertState>();
  /** parent task id -> ids of tasks that name it as a parent. */
  readonly children: ChildIndex;
  /** Each task's weight among those that wait for the same slots (kept per declaration change). */
  readonly weights: PriorityWeights;
  /** Remote workers connected and gone, and the attempts of queues and of remote workers in flight. */
  workers = new WorkersProjection();
  /** Position of the last event applied (-1n: none). */
  position = -1n;
  /** Events applied since the projection was created or restored. */
  applied = 0;

  /**
   * `restored`: the tasks to start from, restored from a snapshot, and the index of their
   * parents if the reader built it (else it is built here). The maps are taken as they are.
   */
  constructor(restored?: Pick<RestoredSnapshot, "tasks" | "children">) {
    this.tasks = restored?.tasks ?? new IdMap();
    this.children = restored?.children ?? new ChildIndex();
    if (restored && !restored.children) for (const t of this.tasks.values()) this.indexParents(undefined, t);
    this.weights = new PriorityWeights(this.tasks, this.children);
  }

  apply(e: LoggedEvent): Touched {
    if (e.position <= this.position) return {};
    this.position = e.position;
    this.applied += 1;
    switch (streamCategory(e.streamId)) {
      case "task":
        return this.applyTask(e);
      case "instance":
        return this.applyInstance(e);
      case "connection":
        if (e.type === "ConnectionDeclared") {
          this.connections.set(e.data.spec.name, e.data.spec);
          this.connectionRevisions.set(e.data.spec.name, e.revision);
          return { connection: e.data.spec.name };
        }
        if (e.type === "ConnectionSlotsTaken") {
          this.connectionRevisions.set(e.data.connection, e.revision);
          return { connection: e.data.connection };
        }
        return {};
      case "workflow":
        if (e.type === "WorkflowDeclared") {
          this.workflows.set(e.data.spec.name, e.data.spec);
          this.workflowRevisions.set(e.data.spec.name, e.revision);
        }
        if (e.type === "WorkflowRetired") {
          // No longer declared; the revision stays, for a declaration of it again.
          this.workflows.delete(e.data.name);
          this.workflowRevisions.set(e.data.name, e.revision);
        }
        return {};
      case "run":
        return this.applyRun(e);
      case "alert":
        return this.applyAlert(e);
      case "worker":
        this.workers.applyWorker(e);
        return {};
      default:
        return {};
    }
  }

  private applyTask(e: LoggedEvent): Touched {
    const id = e.streamId.slice("task-".length);
    const before = this.tasks.get(id);
    const evolved = evolveTask(before, e, e);
    if (!evolved) return {};
    const after = this.compact(evolved, before);
    this.tasks.set(after.id === id ? after.id : id, after);
    if (e.type === "TaskDeclared" || e.type === "TaskDeclarationChanged") this.indexParents(before, after);
    if (DECLARATION_EVENTS.has(e.type)) this.weights.changed();
    if (before && before.logicalDate !== after.logicalDate) this.prune(before.id, before.logicalDate);
    if (e.type === "IntervalRetried" && after.spec.workflow !== undefined) {
      // Reopened while its run goes on: the run waits for it again.
      const runId = runIdOf(after.spec.workflow, e.data.logicalDate);
      const run = this.runs.get(runId);
      if (run?.status === "running") {
        this.runs.set(runId, withoutOutcome(run, id));
        return { task: id, run: runId };
      }
    }
    return { task: id };
  }

  private applyInstance(e: LoggedEvent): Touched {
    const after = evolveInstance(this.instances.get(e.streamId), e, {
      revision: e.revision,
      position: e.position,
      recordedAt: e.metadata.recordedAt,
      streamId: e.streamId,
    });
    if (!after) return {};
    this.instances.set(e.streamId, after);
    const taskId = formatTaskKey(after.key);
    if (e.type === "AttemptSucceeded" && e.data.cacheKey && !e.data.cacheHit)
      this.rememberCacheKey(taskId, e.data.cacheKey);
    if (e.type === "AttemptSucceeded" && !e.data.cacheHit) {
      const window = this.durations.get(taskId);
      const after = recordDuration(window ?? [], e.data.durationMs);
      if (after !== window) this.durations.set(taskId, after);
    }
    let runTouched: string | undefined;
    if (after.runId) {
      const run = this.runs.get(after.runId);
      if (run) {
        this.runs.set(after.runId, withOutcome(run, taskId, after.status, after.marked?.outcome ?? null));
        runTouched = after.runId;
      }
    }
    const task = this.tasks.get(taskId);
    // An outside task's report ahead of the task is held until the task reaches it.
    const heldReport =
      !!after.reported && !!task && Date.parse(after.logicalDate) > Date.parse(task.logicalDate);
    this.workers.applyAttempt(e, taskId, after.logicalDate, task?.spec.queue);
    if (
      isTerminal(after) &&
      !heldReport &&
      (!task || task.logicalDate !== after.logicalDate || !countsForTask(after, task))
    ) {
      this.instances.delete(e.streamId);
    }
    return runTouched
      ? { task: taskId, instance: e.streamId, run: runTouched }
      : { task: taskId, instance: e.streamId };
  }

  private rememberCacheKey(taskId: string, key: string): void {
    const keys = (this.cacheKeys.get(taskId) ?? []).filter((k) => k !== key);
    keys.push(key);
    if (keys.length > CACHE_KEYS_PER_TASK) keys.splice(0, keys.length - CACHE_KEYS_PER_TASK);
    this.cacheKeys.set(taskId, keys);
  }

  /** Whether an attempt of `taskId` with this cache key has succeeded before. */
  hasCacheKey(taskId: string, key: string): boolean {
    return this.cacheKeys.get(taskId)?.includes(key) ?? false;
  }

  private applyRun(e: LoggedEvent): Touched {
    const id = e.streamId.slice("run-".length);
    const before = this.runs.get(id);
    const after = evolveRun(before, e, {
      revision: e.revision,
      recordedAt: e.metadata.recordedAt,
      actor: e.metadata.actor,
    });
    if (!after) return {};
    // Re-inserting moves a run to the end: the map stays ordered by last change.
    this.runs.delete(id);
    this.runs.set(id, after);
    if (after.status !== "running") this.pruneRuns();
    return { run: id };
  }

  private applyAlert(e: LoggedEvent): Touched {
    const after = evolveAlert(this.alerts.get(e.streamId), e, {
      revision: e.revision,
      recordedAt: e.metadata.recordedAt,
      streamId: e.streamId,
    });
    if (!after) return {};
    this.alerts.delete(e.streamId);
    this.alerts.set(e.streamId, after);
    if (alertDone(after)) {
      let done = 0;
      for (const a of this.alerts.values()) if (alertDone(a)) done += 1;
      for (const [id, a] of this.alerts) {
        if (done <= RECENT_DONE_ALERTS) break;
        if (alertDone(a)) {
          this.alerts.delete(id);
          done -= 1;
        }
      }
    }
    return { alert: e.streamId };
  }

  private pruneRuns(): void {
    let finished = 0;
    for (const r of this.runs.values()) if (r.status !== "running") finished += 1;
    for (const [id, r] of this.runs) {
      if (finished <= RECENT_FINISHED_RUNS) break;
      if (r.status !== "running") {
        this.runs.delete(id);
        finished -= 1;
      }
    }
  }

  /** Whether the task's current interval has an attempt on record (see DeclarationState). */
  inPlay(task: TaskState): boolean {
    return this.currentInstance(task) !== undefined;
  }

  /** The instance of a task's current interval, if it is in play. */
  currentInstance(task: TaskState): InstanceState | undefined {
    const inst = this.instances.get(instanceStream(task.key, task.logicalDate));
    return inst && countsForTask(inst, task) ? inst : undefined;
  }

  private prune(taskId: string, logicalDate: string): void {
    const task = this.tasks.get(taskId);
    if (!task) return;
    const stream = instanceStream(task.key, logicalDate);
    const inst = this.instances.get(stream);
    if (inst && isTerminal(inst)) this.instances.delete(stream);
  }

  private indexParents(before: TaskState | undefined, after: TaskState): void {
    for (const p of before?.parents ?? []) this.children.delete(formatTaskKey(p), after.id);
    for (const p of after.parents) this.children.add(formatTaskKey(p), after.id);
  }

  // ---- memory per task ------------------------------------------------------------------------

  /** Instants held by task states, one string for each value (see `compact`). */
  private readonly instants = new Interned<string>();

  /** One string for an instant many tasks hold (their logical date, next run, start date). */
  private instant(text: string): string {
    return this.instants.of(text, text);
  }

  /**
   * The same state, holding less: every event's fold reads its strings afresh, so a hundred
   * thousand tasks each held their own copy of the same instants, a second copy of their key
   * (the event's `key` beside `spec.key`) and an id built by concatenation (a chain of string
   * pieces) beside the stream's. Strings are immutable and keys are never changed, so the
   * state is the same value; only the copies go.
   */
  private compact(task: TaskState, before: TaskState | undefined): TaskState {
    let { key, id, spec, parents } = task;
    if (before && sameKey(before.key, key)) {
      key = before.key;
      id = before.id;
    } else id = flat(id);
    // A declaration read afresh (declared or changed; other events keep the state's own).
    if (spec !== before?.spec) spec = this.shareSpec(spec);
    if (parents !== before?.parents) parents = this.shareParents(parents);
    // One literal of every field, in the fold's order (as evolveTask makes them): a spread took
    // whatever shape the copy gave it, in some settles most fields in an array of their own.
    const state: TaskState = {
      key,
      id,
      spec,
      parents,
      status: task.status,
      logicalDate: this.instant(task.logicalDate),
      prevIntervalStart: task.prevIntervalStart === null ? null : this.instant(task.prevIntervalStart),
      nextRunDate: this.instant(task.nextRunDate),
      failure: task.failure,
      backfill: task.backfill,
      revision: task.revision,
      movedAt: task.movedAt,
    };
    return task.pausedReason === undefined ? state : { ...state, pausedReason: task.pausedReason };
  }

  /** Parts of declarations many tasks hold alike, one object for each value (see `shareSpec`). */
  private readonly parts = new Interned<unknown[]>();
  /** Declarations (but for key and parents) many tasks hold alike, one object for each value. */
  private readonly specs = new Interned<DeclaredSpec>();

  /**
   * The declaration, holding less: tasks declared alike (all but their keys and parents, which
   * the task states hold) hold one object, and within different ones the parts that tasks often
   * declare alike (the operator, the retry policy, the config, the alert sinks) are one object
   * for each value. A declaration is never changed (a change declares a new one), so sharing it
   * keeps the same value.
   */
  private shareSpec(spec: DeclaredSpec): DeclaredSpec {
    const text = JSON.stringify(spec);
    const held = this.specs.get(text);
    if (held !== undefined) return held;
    const shared: Record<string, unknown> = { ...spec, startDate: this.instant(spec.startDate) };
    // The parts together, as one text: one look-up for all of them.
    const values = SHARED_PARTS.map((part) => shared[part]);
    const known = this.parts.of(JSON.stringify(values), values);
    if (known !== values)
      for (const [i, part] of SHARED_PARTS.entries()) if (part in shared) shared[part] = known[i];
    return this.specs.of(text, shared as DeclaredSpec);
  }

  /** The parents' keys, each the parent's own key object where the parent is known. */
  private shareParents(parents: readonly TaskKey[]): readonly TaskKey[] {
    if (parents.length === 0) return NO_PARENTS;
    return parents.map((p) => {
      // Not `formatTaskKey`, which would remember the text for this copy of the key.
      const held = this.tasks.get(`${p.project}/${p.account}/${p.name}/${p.partition}`)?.key;
      return held && sameKey(held, p) ? held : p;
    });
  }

  // ---- snapshots ----------------------------------------------------------------------------

  toSnapshot(): ProjectionSnapshot {
    return {
      format: SNAPSHOT_FORMAT,
      position: this.position.toString(),
      tasks: [...this.tasks.values()].map((t) => ({
        ...t,
        revision: t.revision.toString(),
        movedAt: t.movedAt.toString(),
      })),
      instances: [...this.instances.values()].map((i) => ({
        ...i,
        revision: i.revision.toString(),
        dispatchedAt: i.dispatchedAt.toString(),
      })),
      connections: [...this.connections.values()],
      connectionRevisions: [...this.connectionRevisions].map(([c, r]) => [c, r.toString()] as const),
      workflows: [...this.workflows.values()],
      workflowRevisions: [...this.workflowRevisions].map(([w, r]) => [w, r.toString()] as const),
      runs: [...this.runs.values()].map((r) => ({ ...r, revision: r.revision.toString() })),
      alerts: [...this.alerts.values()].map((a) => ({ ...a, revision: a.revision.toString() })),
      cacheKeys: [...this.cacheKeys.entries()],
      durations: [...this.durations.entries()].map(([t, d]) => [t, [...d]] as const),
      workers: this.workers.toSnapshot(),
    };
  }

  /**
   * The projection a snapshot holds. Its tasks are either the snapshot's records, or a map of
   * task states a reader of the snapshot has already restored (see `taskFromSnapshot`), taken
   * as it is: a million tasks are then built once, not twice.
   */
  static fromSnapshot(s: ProjectionSnapshot | RestoredSnapshot): SchedulerProjection {
    if (s.format !== SNAPSHOT_FORMAT)
      throw new Error(`snapshot format ${String(s.format)} is not ${SNAPSHOT_FORMAT}`);
    let p: SchedulerProjection;
    if (s.tasks instanceof IdMap || s.tasks instanceof Map) {
      const restored = s as RestoredSnapshot;
      p = new SchedulerProjection({ tasks: restored.tasks, children: restored.children });
    } else {
      if (!Array.isArray(s.tasks)) throw new Error("the snapshot holds no list of tasks");
      p = new SchedulerProjection();
      const instant = (text: string) => p.instant(text);
      for (const t of s.tasks as ProjectionSnapshot["tasks"]) {
        const task = taskFromSnapshot(t, instant);
        p.tasks.set(task.id, task);
        p.indexParents(undefined, task);
      }
    }
    p.position = BigInt(s.position);
    for (const i of s.instances) {
      p.instances.set(i.stream, { ...i, revision: BigInt(i.revision), dispatchedAt: BigInt(i.dispatchedAt) });
    }
    for (const c of s.connections) p.connections.set(c.name, c);
    for (const [c, r] of s.connectionRevisions) p.connectionRevisions.set(c, BigInt(r));
    for (const w of s.workflows) p.workflows.set(w.name, w);
    for (const [w, r] of s.workflowRevisions) p.workflowRevisions.set(w, BigInt(r));
    for (const r of s.runs) p.runs.set(r.runId, { ...r, revision: BigInt(r.revision) });
    for (const a of s.alerts) p.alerts.set(a.stream, { ...a, revision: BigInt(a.revision) });
    for (const [task, keys] of s.cacheKeys) p.cacheKeys.set(task, [...keys]);
    for (const [task, ms] of s.durations) p.durations.set(task, ms.slice());
    p.workers = WorkersProjection.fromSnapshot(s.workers);
    return p;
  }
}

/** Bumped whenever the projection's shape or fold changes: an old snapshot is then rebuilt from the log. */
export const SNAPSHOT_FORMAT = 10;

type Stringly<T, K extends keyof T> = Omit<T, K> & { [P in K]: string };

/** A task as a snapshot holds it. */
export type SnapshotTask = Stringly<TaskState, "revision" | "movedAt">;

/** A snapshot whose tasks a reader has restored already, by id, in the projection's order. */
export type RestoredSnapshot = Omit<ProjectionSnapshot, "tasks"> & {
  readonly tasks: Map<string, TaskState>;
  /** parent task id -> ids of the tasks that name it, if the reader built it. */
  readonly children?: ChildIndex;
};

/**
 * A task state from its snapshot record. Read from one JSON text, the id is a flat string
 * already; the key is shared with its declaration's and the instants through `instant` (one
 * string for each value), as the fold's `compact` shares them.
 */
export function taskFromSnapshot(t: SnapshotTask, instant: (text: string) => string): TaskState {
  return {
    ...t,
    logicalDate: instant(t.logicalDate),
    nextRunDate: instant(t.nextRunDate),
    prevIntervalStart: t.prevIntervalStart === null ? null : instant(t.prevIntervalStart),
    revision: BigInt(t.revision),
    movedAt: BigInt(t.movedAt),
  };
}

export interface ProjectionSnapshot {
  readonly format: number;
  readonly position: string;
  readonly tasks: ReadonlyArray<SnapshotTask>;
  readonly instances: ReadonlyArray<Stringly<InstanceState, "revision" | "dispatchedAt">>;
  readonly connections: readonly ConnectionSpec[];
  readonly connectionRevisions: ReadonlyArray<readonly [string, string]>;
  readonly workflows: readonly WorkflowSpec[];
  readonly workflowRevisions: ReadonlyArray<readonly [string, string]>;
  readonly runs: ReadonlyArray<Stringly<RunState, "revision">>;
  readonly alerts: ReadonlyArray<Stringly<AlertState, "revision">>;
  readonly cacheKeys: ReadonlyArray<readonly [string, readonly string[]]>;
  readonly durations: ReadonlyArray<readonly [string, readonly number[]]>;
  /** Remote workers and the attempts they run (absent in snapshots taken before them). */
  readonly workers?: WorkersSnapshot;
}

/** The parents of every task that has none: one list, never changed. */
/** The task events after which weights are counted again. */
const DECLARATION_EVENTS = new Set(["TaskDeclared", "TaskDeclarationChanged", "TaskRetired", "TaskRevived"]);

export const NO_PARENTS = Object.freeze([]) as readonly TaskKey[] as TaskKey[];

const NO_CHILDREN: readonly string[] = Object.freeze([]);

/**
 * The index of children: parent task id -> the ids of the tasks that name it as a parent, in the
 * order they were added. Most tasks that are parents have one child or a few: one is held as its
 * id alone, a few in a list, and a set is made past FEW_CHILDREN (a set for every parent was a
 * tenth of a restart's time and over a hundred bytes a parent).
 */
export class ChildIndex {
  private readonly map: IdMap<string | string[] | Set<string>>;

  /** `expected`: how many parents the index will hold (it grows past that as it must). */
  constructor(expected = 0) {
    this.map = new IdMap(expected);
  }

  /** How many tasks are the parent of some task. */
  get size(): number {
    return this.map.size;
  }

  add(parent: string, id: string): void {
    const held = this.map.get(parent);
    if (held === undefined) this.map.set(parent, id);
    else if (typeof held === "string") {
      if (held !== id) this.map.set(parent, [held, id]);
    } else if (Array.isArray(held)) {
      if (held.includes(id)) return;
      if (held.length < FEW_CHILDREN) held.push(id);
      else this.map.set(parent, new Set([...held, id]));
    } else held.add(id);
  }

  /**
   * For an index being built from a checkpoint, one look-up a parent instead of one a child:
   * `parent`'s children when the index holds none of them yet. The ids are distinct, and a
   * list passed becomes the index's own.
   */
  putNew(parent: string, ids: string | string[]): void {
    this.map.set(parent, typeof ids === "string" || ids.length <= FEW_CHILDREN ? ids : new Set(ids));
  }

  delete(parent: string, id: string): void {
    const held = this.map.get(parent);
    if (held === undefined) return;
    if (held === id) this.map.delete(parent);
    else if (Array.isArray(held)) {
      const at = held.indexOf(id);
      if (at < 0) return;
      if (held.length === 2) this.map.set(parent, held[1 - at] as string);
      else held.splice(at, 1);
    } else if (typeof held === "object") {
      held.delete(id);
      if (held.size === 0) this.map.delete(parent);
    }
  }

  /** The ids of the tasks that name `parent` (none: an empty list). */
  of(parent: string): Iterable<string> {
    const held = this.map.get(parent);
    if (held === undefined) return NO_CHILDREN;
    // A copy of a list: the index may change while the caller goes through it.
    return typeof held === "string" ? [held] : Array.isArray(held) ? held.slice() : held;
  }

  /** How many tasks name `parent`. */
  count(parent: string): number {
    const held = this.map.get(parent);
    if (held === undefined) return 0;
    if (typeof held === "string") return 1;
    return Array.isArray(held) ? held.length : held.size;
  }
}

/** Children held in a list at most; more are held in a set. */
const FEW_CHILDREN = 16;

/**
 * A bounded table of values many states hold alike, by a text that names each: `of` gives the
 * value held for the text, or keeps and gives the one passed. The values in use move with the
 * schedule and the declarations: the table is started again before it grows past `max`.
 */
export class Interned<V> {
  private readonly table = new Map<string, V>();

  constructor(private readonly max = 4096) {}

  /** The value held for `text`, if any. */
  get(text: string): V | undefined {
    return this.table.get(text);
  }

  of(text: string, value: V): V {
    const known = this.table.get(text);
    if (known !== undefined) return known;
    if (this.table.size >= this.max) this.table.clear();
    this.table.set(text, value);
    return value;
  }
}

/** The parts of a declaration that tasks declared alike hold alike. */
const SHARED_PARTS = ["operator", "retry", "config", "alerts"] as const;

function sameKey(a: TaskKey, b: TaskKey): boolean {
  return (
    a === b ||
    (a.project === b.project && a.account === b.account && a.name === b.name && a.partition === b.partition)
  );
}

/**
 * The text as one flat string: a key of an object is kept flat and shared by the engine, where
 * a concatenation keeps a chain of its pieces (about a hundred bytes for a task id).
 */
function flat(text: string): string {
  for (const k in { [text]: 0 }) return k;
  return text;
}
