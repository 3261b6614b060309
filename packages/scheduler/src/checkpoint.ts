import { createReadStream, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { copyFile, link, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  ChildIndex,
  type DeclaredSpec,
  formatTaskKey,
  IdMap,
  Interned,
  NO_PARENTS,
  type ProjectionSnapshot,
  type RestoredSnapshot,
  SchedulerProjection,
  SNAPSHOT_FORMAT,
  type SnapshotTask,
  type TaskKey,
  type TaskState,
  taskFromSnapshot,
} from "@chronolog/core";
import { type EventLog, logAsOf } from "@chronolog/log";

export const SNAPSHOT_FILE = "projection.snapshot.json";

/**
 * Events read at a time while folding. A page is garbage once it is applied: at 1,000 events
 * it dies young, where pages of 5,000 outlived the young generation and made the heap's full
 * collections (about three times as many) the largest cost of a long fold.
 */
const FOLD_PAGE = 1000;

/** The temporary file a checkpoint is written to before it is renamed over the snapshot. */
const snapshotTemp = (path: string, pid: number) => `${path}.${pid}.tmp`;
const SNAPSHOT_TEMP = /^projection\.snapshot\.json\.\d+\.tmp$/;

/**
 * Removes the temporary files of checkpoints that a killed process left half-written in `dir`,
 * and returns how many. Call it only where no other process can be writing a checkpoint there
 * (under the data directory's scheduler lock).
 */
export function removeSnapshotLeftovers(dir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!SNAPSHOT_TEMP.test(name)) continue;
    rmSync(join(dir, name), { force: true });
    removed += 1;
  }
  let rungs: string[] = [];
  try {
    rungs = readdirSync(join(dir, LADDER_DIR));
  } catch {
    // no ladder yet
  }
  for (const name of rungs) {
    if (!/^\d+\.json\.\d+\.tmp$/.test(name)) continue;
    rmSync(join(dir, LADDER_DIR, name), { force: true });
    removed += 1;
  }
  return removed;
}

export interface SnapshotFile {
  readonly snapshot: ProjectionSnapshot;
  /** Hash of the log's event at the snapshot's position: proves the snapshot belongs to this log. */
  readonly headHash: string | null;
}

/** A snapshot file as read: its tasks already restored. */
interface ReadSnapshotFile {
  readonly snapshot: RestoredSnapshot;
  /** Hash of the log's event at the snapshot's position: proves the snapshot belongs to this log. */
  readonly headHash: string | null;
}

// ---- the snapshot file: a line of JSON per record --------------------------------------------

/**
 * The snapshot's lists, in the order the file holds them. The file's first line is the header:
 * the snapshot without these lists, its `headHash`, and how many records of each list follow;
 * then one line of JSON per record. A snapshot of a million tasks is most of a gigabyte of JSON,
 * past the longest string the engine can make (about 512 MiB): as one text it could be neither
 * written nor read.
 */
const SNAPSHOT_LISTS = [
  "tasks",
  "instances",
  "connections",
  "connectionRevisions",
  "workflows",
  "workflowRevisions",
  "runs",
  "alerts",
  "cacheKeys",
] as const satisfies ReadonlyArray<keyof ProjectionSnapshot>;

type SnapshotList = (typeof SNAPSHOT_LISTS)[number];

/**
 * The layout of the file's lines, as its header names it (`lines`). In `lines/3` the tasks are
 * written in blocks of columns (below), a task naming its declaration by its place in a table of
 * the declarations' shared parts. It is the only layout read: the ones before it (`lines/2`, a
 * short array per task; `lines`, every record whole; one JSON document) were written only with
 * snapshot formats before SNAPSHOT_FORMAT 8, which are refused anyway.
 */
const LAYOUT = "lines/3";

/**
 * The most tasks a reader makes room for from the header's count before it has read them (a
 * header that claims more makes no larger table than this, 48 MiB; the table grows as tasks are
 * read). Nor more than the header's blocks can hold.
 */
const MAX_PRESIZED = 1 << 22;

/** Tasks in one block line of a `lines/3` file. */
const TASK_BLOCK = 4096;

// ---- tasks, written compactly --------------------------------------------------------------

/** A task's fields after its key, id and declaration, in the order the fold makes them. */
const TASK_FIELDS = [
  "status",
  "logicalDate",
  "prevIntervalStart",
  "nextRunDate",
  "failure",
  "backfill",
  "revision",
  "movedAt",
] as const;

const KEY_FIELDS = ["project", "account", "name", "partition"] as const;

/** The key as `formatTaskKey` writes it, if it reads back as the same key (else null). */
function keyText(key: TaskKey): string | null {
  const names = Object.keys(key);
  if (names.length !== KEY_FIELDS.length) return null;
  for (const [i, f] of KEY_FIELDS.entries()) {
    const part = key[f];
    if (names[i] !== f || typeof part !== "string" || part.includes("/")) return null;
  }
  return formatTaskKey(key);
}

/**
 * A block of tasks as its line holds it: a column per field, each as long as `id`. `decl` is
 * the place of a task's declaration in the file's table (-1: the task is in `whole`, by its
 * place in the block, written whole); `parents` how many parents each names, their references
 * one after another in `parentRefs`: a number is the place in the file of a task written before
 * (its key is that task's), a string a task id. The instant fields hold places in the file's
 * table of instants; `extras` holds a task's fields past the usual ones, by its place. `key`
 * holds three numbers a task, the places of its key's project, account and partition in the
 * block's `keyParts` (the name is what its id has between them; -1 for a task written whole):
 * a key is then made without cutting its id into parts and looking each one up. A column in
 * SAME_COLUMNS whose tasks all hold one value is written `{ "same": value }`.
 */
interface TaskBlock {
  id: string[];
  keyParts: string[];
  key: number[];
  decl: number[];
  parents: number[];
  parentRefs: Array<number | string>;
  status: string[];
  logicalDate: number[];
  prevIntervalStart: Array<number | null>;
  nextRunDate: number[];
  failure: unknown[];
  backfill: unknown[];
  revision: Array<number | string>;
  movedAt: Array<number | string>;
  extras: Record<string, Record<string, unknown>>;
  whole: Record<string, SnapshotTask>;
}

/** The columns of a block, each as long as its `id`. */
const BLOCK_COLUMNS = ["id", "decl", "parents", ...TASK_FIELDS] as const;

/**
 * The columns a block writes as `{ "same": value }` when every task holds that value: all but
 * the ids and the positions, which differ from task to task.
 */
const SAME_COLUMNS = BLOCK_COLUMNS.filter((c) => c !== "id" && c !== "movedAt");

/** A column as the tasks' values: one written as `{ "same": value }` is filled with it. */
function expandColumn(column: unknown, n: number, name: string): unknown[] {
  if (Array.isArray(column)) return column;
  const same = isPlainObject(column) && Object.keys(column).length === 1 ? column.same : undefined;
  if (same === undefined || (typeof same === "object" && same !== null))
    throw new Error(`a block of tasks has no column "${name}" as long as its ids`);
  return new Array(n).fill(same);
}

/** The key part at a place in a block's table. */
function keyPart(parts: readonly string[], at: unknown, id: string): string {
  const part = typeof at === "number" ? parts[at] : undefined;
  if (part === undefined) throw new Error(`the key of ${id} names a part the block does not hold`);
  return part;
}

const emptyBlock = (): TaskBlock => ({
  id: [],
  keyParts: [],
  key: [],
  decl: [],
  parents: [],
  parentRefs: [],
  status: [],
  logicalDate: [],
  prevIntervalStart: [],
  nextRunDate: [],
  failure: [],
  backfill: [],
  revision: [],
  movedAt: [],
  extras: {},
  whole: {},
});

/**
 * Writes the tasks. Tasks declared alike (a schedule, an operator, a retry policy in common)
 * differ only in their key and parents, so a declaration is written once, with its key and
 * parents left out; its tasks name it by its place. Their instants (the same few for most
 * tasks) are places in a table of them, and a parent written before its child is its place in
 * the file. The tasks go in blocks of columns: a block is read with one parse, where a line per
 * task cost a parse, an array and a string per task. A record that would not read back exactly
 * (fields in another order, a key that is not its id) is written whole.
 */
class TaskBlocks {
  private readonly index = new Map<string, number>();
  /** The place of each declaration object met so far in `specs`. */
  private readonly byObject = new Map<object, number>();
  /** The declarations' shared parts, as JSON, in the order of their indexes. */
  readonly specs: string[] = [];
  private readonly instantIndex = new Map<string, number>();
  /** The instants the tasks hold, in the order of their indexes. */
  readonly instants: string[] = [];
  /** Each task written compactly (its key is what its id says): its place in the file. */
  private readonly places = new Map<string, number>();
  private written = 0;
  readonly lines: string[] = [];
  private block = emptyBlock();
  /** The block's key parts, by their text. */
  private parts = new Map<string, number>();

  constructor(private readonly blockSize = TASK_BLOCK) {}

  private instant(text: string): number {
    let at = this.instantIndex.get(text);
    if (at === undefined) {
      at = this.instants.length;
      this.instantIndex.set(text, at);
      this.instants.push(text);
    }
    return at;
  }

  add(t: SnapshotTask): void {
    const b = this.block;
    const at = b.id.length;
    if (!this.compact(t, b)) {
      b.id.push(t.id);
      b.key.push(-1, -1, -1);
      b.decl.push(-1);
      b.parents.push(0);
      b.status.push(t.status);
      b.logicalDate.push(0);
      b.prevIntervalStart.push(null);
      b.nextRunDate.push(0);
      b.failure.push(null);
      b.backfill.push(null);
      b.revision.push(0);
      b.movedAt.push(0);
      b.whole[at] = t;
    } else this.places.set(t.id, this.written);
    this.written += 1;
    if (b.id.length >= this.blockSize) this.flush();
  }

  /** Ends the last block. */
  flush(): void {
    if (this.block.id.length === 0) return;
    const b = this.block as unknown as Record<string, unknown>;
    // A column of one value (tasks declared alike, on one schedule, at one revision) is written
    // as that value: most of a block's columns are, and are then not parsed a task at a time.
    for (const column of SAME_COLUMNS) {
      const values = b[column] as unknown[];
      const first = values[0];
      if ((typeof first !== "object" || first === null) && values.every((v) => v === first))
        b[column] = { same: first };
    }
    this.lines.push(JSON.stringify(this.block));
    this.block = emptyBlock();
    this.parts = new Map();
  }

  /** The place of a key's part in the block's table. */
  private part(text: string): number {
    let at = this.parts.get(text);
    if (at === undefined) {
      at = this.block.keyParts.length;
      this.parts.set(text, at);
      this.block.keyParts.push(text);
    }
    return at;
  }

  /** Adds the task to the block in its compact form, if it reads back exactly from it. */
  private compact(t: SnapshotTask, b: TaskBlock): boolean {
    const names = Object.keys(t);
    if (names[0] !== "key" || names[1] !== "id" || names[2] !== "spec" || names[3] !== "parents")
      return false;
    for (const [i, f] of TASK_FIELDS.entries()) if (names[4 + i] !== f || t[f] === undefined) return false;
    if (keyText(t.key) !== t.id) return false;
    if (typeof t.logicalDate !== "string" || typeof t.nextRunDate !== "string") return false;
    if (t.prevIntervalStart !== null && typeof t.prevIntervalStart !== "string") return false;
    if (!Array.isArray(t.parents)) return false;
    const refs: Array<number | string> = [];
    for (const p of t.parents) {
      const text = keyText(p);
      if (text === null) return false;
      refs.push(this.places.get(text) ?? text);
    }
    let extras: Record<string, unknown> | null = null;
    for (const name of names.slice(4 + TASK_FIELDS.length)) {
      const value = (t as unknown as Record<string, unknown>)[name];
      if (value === undefined) return false;
      extras ??= {};
      extras[name] = value;
    }
    // The declaration, but for its key and parents: tasks declared alike hold one object, so
    // most are found by the object, without writing it out again.
    let decl = this.byObject.get(t.spec);
    if (decl === undefined) {
      const shared = JSON.stringify(t.spec);
      decl = this.index.get(shared);
      if (decl === undefined) {
        decl = this.specs.length;
        this.index.set(shared, decl);
        this.specs.push(shared);
      }
      this.byObject.set(t.spec, decl);
    }
    if (extras !== null) b.extras[b.id.length] = extras;
    b.id.push(t.id);
    b.key.push(this.part(t.key.project), this.part(t.key.account), this.part(t.key.partition));
    b.decl.push(decl);
    b.parents.push(refs.length);
    for (const r of refs) b.parentRefs.push(r);
    b.status.push(t.status);
    b.logicalDate.push(this.instant(t.logicalDate));
    b.prevIntervalStart.push(t.prevIntervalStart === null ? null : this.instant(t.prevIntervalStart));
    b.nextRunDate.push(this.instant(t.nextRunDate));
    b.failure.push(t.failure);
    b.backfill.push(t.backfill);
    b.revision.push(counter(t.revision));
    b.movedAt.push(counter(t.movedAt));
    return true;
  }
}

/** A revision or position (a bigint's digits) as a JSON number, when it is one exactly. */
function counter(digits: string): number | string {
  const n = Number(digits);
  return Number.isSafeInteger(n) && String(n) === digits ? n : digits;
}

/** Small counters as one bigint each: most tasks' revisions are a few values. */
const SMALL_COUNTERS = Array.from({ length: 256 }, (_, i) => BigInt(i));

function bigCounter(value: unknown, what: string): bigint {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0)
    return value < SMALL_COUNTERS.length ? (SMALL_COUNTERS[value] as bigint) : BigInt(value);
  if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value);
  throw new Error(`${what} is not a revision or position`);
}

/** A task's status as one string for each value. */
const STATUSES = new Map<unknown, TaskState["status"]>(
  (["active", "paused", "retired"] as const).map((s) => [s, s]),
);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Restores the tasks of a checkpoint from their records, into the map the projection takes as
 * it is. A task's key is shared with its declaration and with every task that names it as a
 * parent, tasks declared alike share their declaration's parts (a retry policy, an operator,
 * alerts: values never changed), and each instant is one string.
 */
class TaskReader {
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
  /** In a `lines/3` file, the tasks read so far, by their place in the file. */
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

  /** The instant at a place in the file's table. */
  private at(place: unknown): string {
    const text = typeof place === "number" ? this.instants[place] : undefined;
    if (text === undefined)
      throw new Error(`a task record names instant ${String(place)}, which the file does not hold`);
    return text;
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

  /**
   * The key of the task at place `i` in a block: its project, account and partition from the
   * block's table, its name what its id holds between them (the id must be exactly the four).
   */
  private blockKey(b: TaskBlock, i: number, id: string): TaskKey {
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
    const { id: ids, decl, parents, parentRefs: refs, extras, whole } = b;
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
      const key = this.early.size > 0 && this.early.has(id) ? this.own(id) : this.blockKey(b, i, id);
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
      const prev = b.prevIntervalStart[i];
      const status = STATUSES.get(b.status[i]);
      if (status === undefined) throw new Error(`${id} has the status ${String(b.status[i])}`);
      const task: TaskState = {
        key,
        id,
        spec: shared as unknown as DeclaredSpec,
        parents: taskParents,
        status,
        logicalDate: this.at(b.logicalDate[i]),
        prevIntervalStart: prev === null ? null : this.at(prev),
        nextRunDate: this.at(b.nextRunDate[i]),
        failure: b.failure[i] as TaskState["failure"],
        backfill: b.backfill[i] as TaskState["backfill"],
        revision: bigCounter(b.revision[i], `the revision of ${id}`),
        movedAt: bigCounter(b.movedAt[i], `the position of ${id}`),
      };
      const more = extras[i];
      if (more !== undefined) {
        if (!isPlainObject(more))
          throw new Error(`the fields of ${id} past the usual ones are not an object`);
        Object.assign(task, more);
      }
      this.tasks.set(id, task);
      this.placed.push(task);
      this.childrenByPlace.push(undefined);
    }
    if (ref !== refs.length) throw new Error("a block of tasks holds more parents than its tasks name");
    return n;
  }
}

/** Records are joined into pieces of about this many characters before they are written. */
const PIECE_CHARS = 1 << 20;

/**
 * The snapshot as pieces of text, made at once (the projection keeps changing after): each a
 * run of whole lines, so no piece approaches the engine's longest string.
 */
export function snapshotPieces(
  body: SnapshotFile,
  pieceChars = PIECE_CHARS,
  blockSize = TASK_BLOCK,
): string[] {
  const { snapshot, headHash } = body;
  const counts: Record<string, number> = {};
  for (const list of SNAPSHOT_LISTS) counts[list] = snapshot[list].length;
  // The tasks first, so that the tables of their declarations and instants are known for the
  // header.
  const tasks = new TaskBlocks(blockSize);
  for (const t of snapshot.tasks) tasks.add(t);
  tasks.flush();
  const header: Record<string, unknown> = {
    ...snapshot,
    headHash,
    lines: LAYOUT,
    taskFields: TASK_FIELDS,
    specs: tasks.specs.length,
    instants: tasks.instants.length,
    blocks: tasks.lines.length,
    counts,
  };
  for (const list of SNAPSHOT_LISTS) delete header[list];
  const pieces: string[] = [];
  let lines: string[] = [JSON.stringify(header)];
  let chars = 0;
  const add = (line: string) => {
    lines.push(line);
    chars += line.length + 1;
    if (chars >= pieceChars) {
      pieces.push(`${lines.join("\n")}\n`);
      lines = [];
      chars = 0;
    }
  };
  for (const spec of tasks.specs) add(spec);
  for (const instant of tasks.instants) add(JSON.stringify(instant));
  for (const line of tasks.lines) add(line);
  for (const list of SNAPSHOT_LISTS) {
    if (list === "tasks") continue;
    for (const record of snapshot[list]) add(JSON.stringify(record));
  }
  if (lines.length > 0) pieces.push(`${lines.join("\n")}\n`);
  return pieces;
}

/**
 * The lines of a file, read `chunkChars` at a time (never the whole file as one string unless it
 * is one line). Each piece is searched once; a line longer than a piece is gathered from its
 * parts and joined once, so a long line (a block of many tasks, or an older version's snapshot
 * of one line, read only to be refused) costs its length, not its square. Stopping early
 * (`return`, or an error in the reader) closes the file.
 */
export async function* linesOf(path: string, chunkChars = 1 << 20): AsyncGenerator<string> {
  const stream = createReadStream(path, { encoding: "utf8", highWaterMark: chunkChars });
  let parts: string[] = [];
  try {
    for await (const piece of stream) {
      const text = piece as string;
      let start = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        const end = text.slice(start, nl);
        if (parts.length > 0) {
          parts.push(end);
          yield parts.join("");
          parts = [];
        } else yield end;
        start = nl + 1;
      }
      if (start < text.length) parts.push(text.slice(start));
    }
    if (parts.length > 0) yield parts.join("");
  } finally {
    stream.destroy();
  }
}

/**
 * Reads a snapshot file: lines of records after a header. A file of another snapshot format or
 * layout, cut short, or with lines over or under its counts, is refused with the reason.
 */
async function parseSnapshotFile(path: string): Promise<ReadSnapshotFile> {
  const lines = linesOf(path);
  try {
    return await parseSnapshotLines(lines);
  } finally {
    // A file refused before its end is closed here, not left open until the process ends.
    await lines.return(undefined);
  }
}

/**
 * Why a file whose first line is `header` is refused before its records are read, or null if
 * this version reads it. A projection of another shape is rebuilt from the log: known from the
 * header, before a million records are read only to be dropped. A file of one JSON document (the
 * oldest layout) holds its format in its `snapshot`: it is refused for that format, as before.
 */
function refusal(header: Record<string, unknown>): string | null {
  const document = !("lines" in header) && isPlainObject(header.snapshot);
  const format = document ? (header.snapshot as Record<string, unknown>).format : header.format;
  if (format === undefined) return "the file names no snapshot format";
  if (format !== SNAPSHOT_FORMAT) return `snapshot format ${String(format)} is not ${SNAPSHOT_FORMAT}`;
  if (header.lines === LAYOUT) return null;
  const layout = document ? "one JSON document" : JSON.stringify(header.lines ?? null);
  return `snapshot layout ${layout} is not ${LAYOUT}, the only one this version reads`;
}

async function parseSnapshotLines(lines: AsyncGenerator<string>): Promise<ReadSnapshotFile> {
  const first = await lines.next();
  if (first.done) throw new Error("the file is empty");
  const header = JSON.parse(first.value) as unknown;
  if (!isPlainObject(header)) throw new Error("the file's first line is not a header");
  const refused = refusal(header);
  if (refused !== null) throw new Error(refused);
  const counts = header.counts as Record<SnapshotList, number>;
  const snapshot: Record<string, unknown> = { ...header };
  for (const name of ["lines", "counts", "headHash", "taskFields", "specs", "instants", "blocks"])
    delete snapshot[name];
  const count = (n: unknown, what: string): number => {
    if (!Number.isInteger(n) || (n as number) < 0) throw new Error(`the header has no count of ${what}`);
    return n as number;
  };
  const n = count(header.specs, "declarations");
  if (!Array.isArray(header.taskFields) || !header.taskFields.every((f) => typeof f === "string"))
    throw new Error("the header does not name the tasks' fields");
  const fields = header.taskFields as string[];
  if (fields.length !== TASK_FIELDS.length || fields.some((f, i) => f !== TASK_FIELDS[i]))
    throw new Error(`the tasks' fields (${fields.join(", ")}) are not the ones this version reads`);
  const specs: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const line = await lines.next();
    if (line.done) throw new Error(`the file ends after ${i} of its ${n} declarations`);
    const spec = JSON.parse(line.value) as unknown;
    if (!isPlainObject(spec)) throw new Error(`declaration ${i} is not an object`);
    specs.push(spec);
  }
  const m = count(header.instants, "instants");
  const instants: string[] = [];
  for (let i = 0; i < m; i++) {
    const line = await lines.next();
    if (line.done) throw new Error(`the file ends after ${i} of its ${m} instants`);
    const instant = JSON.parse(line.value) as unknown;
    if (typeof instant !== "string") throw new Error(`instant ${i} is not a string`);
    instants.push(instant);
  }
  const claimed = count(counts?.tasks, "tasks");
  const blocks = count(header.blocks, "blocks of tasks");
  const tasks = new TaskReader(specs, instants, Math.min(claimed, blocks * TASK_BLOCK));
  for (const list of SNAPSHOT_LISTS) {
    const n = count(counts?.[list], list);
    if (list === "tasks") {
      let read = 0;
      for (let i = 0; i < blocks; i++) {
        const line = await lines.next();
        if (line.done) throw new Error(`the file ends after ${read} of its ${n} tasks`);
        read += tasks.readBlock(line.value);
      }
      if (read !== n) throw new Error(`the file holds ${read} tasks where its header counts ${n}`);
      tasks.finish();
      snapshot.tasks = tasks.tasks;
      continue;
    }
    const records: unknown[] = [];
    for (let i = 0; i < n; i++) {
      const line = await lines.next();
      if (line.done) throw new Error(`the file ends after ${i} of its ${n} ${list}`);
      records.push(JSON.parse(line.value));
    }
    snapshot[list] = records;
  }
  snapshot.children = tasks.children;
  if ((await lines.next()).done !== true) throw new Error("lines after the last record the header counts");
  return { snapshot: snapshot as unknown as RestoredSnapshot, headHash: header.headHash as string | null };
}

export interface LoadedProjection {
  readonly projection: SchedulerProjection;
  /** Position the snapshot started from (-1n: the whole log was replayed). */
  readonly snapshotPosition: bigint;
  readonly replayed: number;
  /** Why a snapshot on disk was not used, if one was there. */
  readonly discarded: string | null;
}

/**
 * Writes a snapshot atomically: a temporary file, fsync, then rename over the old one. The
 * projection is serialised at once (it is the state as of its position); the write and the
 * fsync happen off the event loop.
 */
export async function saveSnapshot(
  dir: string,
  log: EventLog,
  projection: SchedulerProjection,
  options: LadderOptions = {},
): Promise<void> {
  // Taken before any await: the projection keeps following the log meanwhile, and the hash
  // read below must be the one at the snapshot's own position.
  const snapshot = projection.toSnapshot();
  const position = projection.position;
  let headHash: string | null = null;
  if (position >= 0n) {
    const [at] = await log.readAllStored({ fromPosition: position, maxCount: 1 });
    headHash = at && at.position === position ? at.metadata.hash : null;
  }
  const body: SnapshotFile = { snapshot, headHash };
  const path = join(dir, SNAPSHOT_FILE);
  const tmp = snapshotTemp(path, process.pid);
  const pieces = snapshotPieces(body);
  const file = await open(tmp, "w");
  try {
    // Each piece is written whole, after the one before (a handle writes on from where it is).
    for (const piece of pieces) await file.writeFile(piece);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
  await addRung(dir, path, position, options.spacing ?? LADDER_SPACING);
}

export interface LadderOptions {
  /** Rungs closer than this many events to the one below are dropped (default LADDER_SPACING). */
  readonly spacing?: bigint;
}

// ---- the ladder: snapshots kept at spaced positions, for the state as of any position -----

/** Where the ladder's snapshots are, one file per position: `snapshots/<position>.json`. */
export const LADDER_DIR = "snapshots";
/** Rungs closer than this many events to the one below are dropped (the newest stays). */
export const LADDER_SPACING = 50_000n;
/** Rungs kept at most: past this, the two closest merge, so the spacing grows with the log. */
export const LADDER_MAX_RUNGS = 32;

const RUNG = /^(\d+)\.json$/;

/** The positions of the ladder's snapshots, lowest first. */
export function ladderRungs(dir: string): bigint[] {
  let names: string[];
  try {
    names = readdirSync(join(dir, LADDER_DIR));
  } catch {
    return [];
  }
  return names
    .map((n) => RUNG.exec(n)?.[1])
    .filter((m): m is string => m !== undefined)
    .map(BigInt)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

const rungPath = (dir: string, position: bigint) => join(dir, LADDER_DIR, `${position}.json`);

/**
 * Keeps the checkpoint just written as the ladder's newest rung (a hard link: no copy), then
 * thins the ladder: a rung too close to the one below goes unless it is the newest, and past
 * the most rungs kept the one whose removal leaves the smallest gap goes.
 */
async function addRung(dir: string, snapshotPath: string, position: bigint, spacing: bigint): Promise<void> {
  if (position < 0n) return;
  mkdirSync(join(dir, LADDER_DIR), { recursive: true });
  const target = rungPath(dir, position);
  if (!existsSync(target)) {
    const tmp = `${target}.${process.pid}.tmp`;
    try {
      await link(snapshotPath, tmp);
    } catch {
      await copyFile(snapshotPath, tmp);
    }
    await rename(tmp, target);
  }
  const rungs = ladderRungs(dir);
  const keep: bigint[] = [];
  for (const [i, r] of rungs.entries()) {
    const last = keep.at(-1);
    const newest = i === rungs.length - 1;
    if (last !== undefined && !newest && r - last < spacing) continue;
    keep.push(r);
  }
  while (keep.length > LADDER_MAX_RUNGS) {
    let at = 1;
    let smallest: bigint | null = null;
    for (let i = 1; i < keep.length - 1; i++) {
      const gap = (keep[i + 1] as bigint) - (keep[i - 1] as bigint);
      if (smallest === null || gap < smallest) {
        smallest = gap;
        at = i;
      }
    }
    keep.splice(at, 1);
  }
  const kept = new Set(keep);
  await Promise.all(rungs.filter((r) => !kept.has(r)).map((r) => rm(rungPath(dir, r), { force: true })));
}

/**
 * Writes rungs of the ladder while folding the whole log from the start (what `rebuild` does):
 * a snapshot every `LADDER_SPACING` events, then the head's. Returns the projection at the head.
 */
export async function rebuildWithLadder(
  log: EventLog,
  dir: string,
  options: LadderOptions = {},
): Promise<LoadedProjection> {
  const spacing = options.spacing ?? LADDER_SPACING;
  rmSync(join(dir, LADDER_DIR), { recursive: true, force: true });
  const projection = new SchedulerProjection();
  let replayed = 0;
  let nextRung = spacing - 1n;
  for (;;) {
    const page = await log.readAll({ fromPosition: projection.position + 1n, maxCount: FOLD_PAGE });
    if (page.length === 0) break;
    for (const e of page) {
      projection.apply(e);
      replayed += 1;
      if (e.position >= nextRung) {
        await saveSnapshot(dir, log, projection, options);
        nextRung = e.position + spacing;
      }
    }
  }
  await saveSnapshot(dir, log, projection, options);
  return { projection, snapshotPosition: -1n, replayed, discarded: null };
}

export interface ProjectionAsOf {
  readonly projection: SchedulerProjection;
  /** The log as of the position: reads of history through it see nothing later. */
  readonly log: EventLog;
  readonly position: bigint;
  /** The event at the position (null: before the first event). */
  readonly event: { readonly hash: string; readonly recordedAt: string } | null;
  /** The rung it was folded from (-1n: from the start), and how many events were folded. */
  readonly fromSnapshot: bigint;
  readonly replayed: number;
  /** Rungs not used because they did not match this log, with why. */
  readonly discarded: readonly string[];
}

/**
 * The state as the projection was right after the event at `position`: folded from the
 * nearest rung of the ladder at or below it whose hash matches the log at its position (a
 * rung that does not match is never used), or from the start. A position past the head is the
 * head. With no directory (an export read on its own), it folds from the start.
 */
export async function projectionAsOf(
  log: EventLog,
  dir: string | null,
  position: bigint,
): Promise<ProjectionAsOf> {
  const head = await log.headPosition();
  const at = position > head ? head : position;
  const view = logAsOf(log, at);
  const discarded: string[] = [];
  let projection: SchedulerProjection | null = null;
  for (const r of dir === null ? [] : ladderRungs(dir).reverse()) {
    if (r > at || dir === null) continue;
    const loaded = await readSnapshotFile(rungPath(dir, r), log);
    if (loaded.projection) {
      projection = loaded.projection;
      break;
    }
    discarded.push(`snapshot at position ${r}: ${loaded.discarded}`);
  }
  projection ??= new SchedulerProjection();
  const fromSnapshot = projection.position;
  const replayed = await catchUp(view, projection);
  let event: ProjectionAsOf["event"] = null;
  if (at >= 0n) {
    const [e] = await log.readAllStored({ fromPosition: at, maxCount: 1 });
    if (e) event = { hash: e.metadata.hash, recordedAt: e.metadata.recordedAt };
  }
  return { projection, log: view, position: at, event, fromSnapshot, replayed, discarded };
}

export function dropSnapshot(dir: string): boolean {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}

async function readSnapshot(
  dir: string,
  log: EventLog,
): Promise<{ projection?: SchedulerProjection; discarded: string | null }> {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return { discarded: null };
  return readSnapshotFile(path, log);
}

/** A snapshot file, if it belongs to this log: the event at its position has the hash it recorded. */
async function readSnapshotFile(
  path: string,
  log: EventLog,
): Promise<{ projection?: SchedulerProjection; discarded: string | null }> {
  try {
    const file = await parseSnapshotFile(path);
    const projection = SchedulerProjection.fromSnapshot(file.snapshot);
    if (projection.position >= 0n) {
      const [at] = await log.readAllStored({ fromPosition: projection.position, maxCount: 1 });
      if (!at || at.position !== projection.position || at.metadata.hash !== file.headHash) {
        return { discarded: "the snapshot does not match this log" };
      }
    }
    return { projection, discarded: null };
  } catch (error) {
    return { discarded: `unreadable snapshot: ${(error as Error).message}` };
  }
}

/**
 * The projection as of the log's head: from the last snapshot plus the log's tail, or from
 * the whole log when there is no usable snapshot (or `fromScratch`).
 */
export async function loadProjection(
  log: EventLog,
  dir: string,
  options: { fromScratch?: boolean } = {},
): Promise<LoadedProjection> {
  const loaded = options.fromScratch ? { discarded: null } : await readSnapshot(dir, log);
  const projection = loaded.projection ?? new SchedulerProjection();
  const snapshotPosition = projection.position;
  const replayed = await catchUp(log, projection);
  return { projection, snapshotPosition, replayed, discarded: loaded.discarded };
}

/** Applies every event after the projection's position; returns how many. */
export async function catchUp(log: EventLog, projection: SchedulerProjection): Promise<number> {
  let count = 0;
  for (;;) {
    const page = await log.readAll({ fromPosition: projection.position + 1n, maxCount: FOLD_PAGE });
    if (page.length === 0) return count;
    for (const e of page) projection.apply(e);
    count += page.length;
  }
}
