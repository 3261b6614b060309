import {
  ChildIndex,
  type DeclaredSpec,
  formatTaskKey,
  IdMap,
  Interned,
  NO_PARENTS,
  type SnapshotTask,
  type TaskKey,
  type TaskState,
  taskFromSnapshot,
} from "@chronolog/core";
import { BLOCK_COLUMNS, isPlainObject, keyText, SAME_COLUMNS, type TaskBlock } from "./columns.js";

/**
 * The most tasks a reader makes room for from the header's count before it has read them (a
 * header that claims more makes no larger table than this, 48 MiB; the table grows as tasks are
 * read). Nor more than the header's blocks can hold.
 */
const MAX_PRESIZED = 1 << 22;

/** A column as the tasks' values: one written as `{ "same": value }` is filled with it. */
export function expandColumn(column: unknown, n: number, name: string): unknown[] {
  if (Array.isArray(column)) return column;
  const same = isPlainObject(column) && Object.keys(column).length === 1 ? column.same : undefined;
  if (same === undefined || (typeof same === "object" && same !== null))
    throw new Error(`a block of tasks has no column "${name}" as long as its ids`);
  return new Array(n).fill(same);
}

/** The key part at a place in a block's table. */
export function keyPart(parts: readonly string[], at: unknown, id: string): string {
  const part = typeof at === "number" ? parts[at] : undefined;
  if (part === undefined) throw new Error(`the key of ${id} names a part the block does not hold`);
  return part;
}

/** Small counters as one bigint each: most tasks' revisions are a few values. */
const SMALL_COUNTERS = Array.from({ length: 256 }, (_, i) => BigInt(i));

export function bigCounter(value: unknown, what: string): bigint {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0)
    return value < SMALL_COUNTERS.length ? (SMALL_COUNTERS[value] as bigint) : BigInt(value);
  if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value);
  throw new Error(`${what} is not a revision or position`);
}

/** A task's status as one string for each value. */
export const STATUSES = new Map<unknown, TaskState["status"]>(
  (["active", "paused", "retired"] as const).map((s) => [s, s]),
);

/**
 * Restores the tasks of a checkpoint from their records, into the map the projection takes as
 * it is. A task's key is shared with its declaration and with every task that names it as a
 * parent, tasks declared alike share their declaration's parts (a retry policy, an operator,
 * alerts: values never changed), and each instant is one string.
 */
export class ColumnReader {
  /** The tasks by id, sized for the count the file's header gives. */
  readonly tasks: IdMap<TaskState>;
  /** parent id -> the ids of the tasks that name it, as the projection indexes them. */
  children = new ChildIndex();
  /** Keys named as parents before their task was read (or of tasks never declared). */
  private readonly early = new Map<string, TaskKey>();
  /** For whole records: one string for each instant. */
  private readonly held = new Interned<string>();
  private readonly instant = (text: string): string => this.held.of(text, text);
  /** Parts of keys that many tasks share: a project, an account, a partition. */
  private readonly keyParts = new Interned<string>();
  /** The tasks read so far, by their place in the file. */
  private readonly placed: TaskState[] = [];
  /**
   * The children of the tasks read so far, by the parent's place, gathered here and put into
   * the index at the end (`finish`): one look-up of the index a parent, not one a child.
   */
  private readonly childrenByPlace: Array<string | string[] | undefined> = [];

  /** The file's tables: its declarations' shared parts and its instants. */
  constructor(
    private readonly specs: readonly Record<string, unknown>[],
    private readonly instants: readonly string[],
    expected: number,
  ) {
    this.tasks = new IdMap(Math.min(expected, MAX_PRESIZED));
  }

  /** A parent's key: its task's, if read already. */
  private parent(id: string): TaskKey {
    let key = this.early.get(id) ?? this.tasks.get(id)?.key;
    if (key === undefined) {
      key = this.keyOf(id);
      this.early.set(id, key);
    }
    return key;
  }

  /** A task's own key: the one its children named, if they came first. */
  private own(id: string): TaskKey {
    const key = this.early.get(id);
    if (key === undefined) return this.keyOf(id);
    this.early.delete(id);
    return key;
  }

  /** The key an id written by `keyText` names. */
  private keyOf(id: string): TaskKey {
    const a = id.indexOf("/");
    const b = id.indexOf("/", a + 1);
    const c = id.indexOf("/", b + 1);
    if (a < 0 || b < 0 || c < 0 || id.includes("/", c + 1)) throw new Error(`"${id}" is not a task id`);
    return {
      project: this.keyPart(id.slice(0, a)),
      account: this.keyPart(id.slice(a + 1, b)),
      name: id.slice(b + 1, c),
      partition: this.keyPart(id.slice(c + 1)),
    };
  }

  private keyPart(text: string): string {
    return this.keyParts.of(text, text);
  }

  /** The declaration's shared parts at a place in the file's table. */
  private declaration(at: unknown): Record<string, unknown> {
    const shared = typeof at === "number" ? this.specs[at] : undefined;
    if (shared === undefined)
      throw new Error(`a task record names declaration ${String(at)}, which the file does not hold`);
    return shared;
  }

  /** A task record written whole. */
  private readWhole(value: SnapshotTask): TaskState {
    if (!isPlainObject(value)) throw new Error("a task record written whole is not an object");
    const task = taskFromSnapshot(value, this.instant);
    this.tasks.set(task.id, task);
    // A key that is not what its id says is not lent to the tasks that name the id.
    if (keyText(task.key) !== task.id && task.id.split("/").length === 4 && !this.early.has(task.id))
      this.early.set(task.id, this.keyOf(task.id));
    for (const p of task.parents) this.children.add(formatTaskKey(p), task.id);
    return task;
  }

  /** Puts the children gathered by place into the index, after those named by id. */
  finish(): void {
    const { placed, childrenByPlace } = this;
    // With no child named by id and no id placed twice, no parent is in the index yet: each is
    // put there with one look-up, in an index made for as many parents.
    const fresh = this.children.size === 0 && this.tasks.size === placed.length;
    if (fresh) {
      let parents = 0;
      for (const held of childrenByPlace) if (held !== undefined) parents += 1;
      this.children = new ChildIndex(parents);
    }
    const { children } = this;
    for (let r = 0; r < childrenByPlace.length; r++) {
      const held = childrenByPlace[r];
      if (held === undefined) continue;
      const parent = (placed[r] as TaskState).id;
      if (fresh) children.putNew(parent, held);
      else if (typeof held === "string") children.add(parent, held);
      else for (const id of held) children.add(parent, id);
    }
    childrenByPlace.length = 0;
  }

  /** A block of tasks of a `lines/3` file; returns how many it held. */
  readBlock(line: string): number {
    const b = parseBlock(line);
    const n = b.id.length;
    const { id: ids, decl, parents, parentRefs: refs, whole } = b;
    let ref = 0;
    for (let i = 0; i < n; i++) {
      if (decl[i] === -1) {
        const task = this.readWhole(whole[i] as SnapshotTask);
        this.placed.push(task);
        this.childrenByPlace.push(undefined);
        continue;
      }
      const id = ids[i];
      if (typeof id !== "string") throw new Error(`a block of tasks holds an id that is not a string`);
      const shared = this.declaration(decl[i]);
      const count = parents[i];
      if (typeof count !== "number" || count < 0 || ref + count > refs.length)
        throw new Error(`the parents of ${id} are not in its block`);
      const key = this.early.size > 0 && this.early.has(id) ? this.own(id) : blockKey(b, i, id);
      let taskParents: TaskKey[] = NO_PARENTS;
      if (count > 0) {
        taskParents = new Array(count);
        for (let j = 0; j < count; j++) {
          const r = refs[ref++];
          if (typeof r === "number") {
            const parentKey = this.placed[r]?.key;
            if (!Number.isInteger(r) || r < 0 || parentKey === undefined)
              throw new Error(`${id} names as a parent task ${r}, which was not written before it`);
            taskParents[j] = parentKey;
            // A child that names one parent twice is its child once (the two come together).
            const held = this.childrenByPlace[r];
            if (held === undefined) this.childrenByPlace[r] = id;
            else if (typeof held === "string") {
              if (held !== id) this.childrenByPlace[r] = [held, id];
            } else if (held[held.length - 1] !== id) held.push(id);
          } else if (typeof r === "string") {
            taskParents[j] = this.parent(r);
            this.children.add(r, id);
          } else throw new Error(`${id} names a parent that is not a task`);
        }
      }
      const task = taskOfRow(b, i, key, id, shared as unknown as DeclaredSpec, taskParents, this.instants);
      this.tasks.set(id, task);
      this.placed.push(task);
      this.childrenByPlace.push(undefined);
    }
    if (ref !== refs.length) throw new Error("a block of tasks holds more parents than its tasks name");
    return n;
  }
}

/**
 * The task at row `i` of a block, given what the reader resolves itself (its key, its shared
 * declaration, its parents): its state from the block's columns, instants from `instants`.
 */
export function taskOfRow(
  b: TaskBlock,
  i: number,
  key: TaskKey,
  id: string,
  spec: DeclaredSpec,
  parents: TaskKey[],
  instants: readonly string[],
): TaskState {
  const prev = b.prevIntervalStart[i];
  const status = STATUSES.get(b.status[i]);
  if (status === undefined) throw new Error(`${id} has the status ${String(b.status[i])}`);
  const task: TaskState = {
    key,
    id,
    spec,
    parents,
    status,
    logicalDate: instantAt(instants, b.logicalDate[i]),
    prevIntervalStart: prev === null ? null : instantAt(instants, prev),
    nextRunDate: instantAt(instants, b.nextRunDate[i]),
    failure: b.failure[i] as TaskState["failure"],
    backfill: b.backfill[i] as TaskState["backfill"],
    revision: bigCounter(b.revision[i], `the revision of ${id}`),
    movedAt: bigCounter(b.movedAt[i], `the position of ${id}`),
  };
  const more = b.extras[i];
  if (more !== undefined) {
    if (!isPlainObject(more)) throw new Error(`the fields of ${id} past the usual ones are not an object`);
    Object.assign(task, more);
  }
  return task;
}

/** The instant at a place in the file's table. */
function instantAt(instants: readonly string[], place: unknown): string {
  const text = typeof place === "number" ? instants[place] : undefined;
  if (text === undefined)
    throw new Error(`a task record names instant ${String(place)}, which the file does not hold`);
  return text;
}

/** A block of tasks from its line, its columns checked and each as long as its ids. */
export function parseBlock(line: string): TaskBlock {
  const b = JSON.parse(line) as TaskBlock;
  if (!isPlainObject(b)) throw new Error("a block of tasks is not an object");
  const n = Array.isArray(b.id) ? b.id.length : -1;
  if (n < 0) throw new Error("a block of tasks has no ids");
  const columns = b as unknown as Record<string, unknown>;
  for (const column of SAME_COLUMNS) columns[column] = expandColumn(columns[column], n, column);
  for (const column of BLOCK_COLUMNS)
    if (!Array.isArray(b[column]) || b[column].length !== n)
      throw new Error(`a block of tasks has no column "${column}" as long as its ids`);
  if (!Array.isArray(b.parentRefs) || !isPlainObject(b.extras) || !isPlainObject(b.whole))
    throw new Error("a block of tasks lacks its parents, extras or whole records");
  if (!Array.isArray(b.keyParts) || !Array.isArray(b.key) || b.key.length !== 3 * n)
    throw new Error("a block of tasks lacks its keys' parts");
  if (b.keyParts.some((p) => typeof p !== "string" || p.includes("/")))
    throw new Error("a block of tasks holds a key part that is not one");
  return b;
}

/**
 * The key of the task at place `i` in a block: its project, account and partition from the
 * block's table, its name what its id holds between them (the id must be exactly the four).
 */
export function blockKey(b: TaskBlock, i: number, id: string): TaskKey {
  const project = keyPart(b.keyParts, b.key[3 * i], id);
  const account = keyPart(b.keyParts, b.key[3 * i + 1], id);
  const partition = keyPart(b.keyParts, b.key[3 * i + 2], id);
  const nameAt = project.length + account.length + 2;
  const nameEnd = id.length - partition.length - 1;
  if (
    nameEnd <= nameAt ||
    !id.startsWith(project) ||
    id.charCodeAt(project.length) !== 47 ||
    !id.startsWith(account, project.length + 1) ||
    id.charCodeAt(nameAt - 1) !== 47 ||
    id.charCodeAt(nameEnd) !== 47 ||
    !id.endsWith(partition)
  )
    throw new Error(`${id} is not the key its block names`);
  const name = id.slice(nameAt, nameEnd);
  if (name.includes("/")) throw new Error(`${id} is not the key its block names`);
  return { project, account, name, partition };
}
