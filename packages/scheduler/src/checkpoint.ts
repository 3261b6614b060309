import { createReadStream, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { copyFile, link, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  addChild,
  formatTaskKey,
  Interned,
  NO_PARENTS,
  type ProjectionSnapshot,
  type RestoredSnapshot,
  SchedulerProjection,
  type SnapshotTask,
  type TaskKey,
  type TaskSpec,
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

/** A snapshot file as read: its tasks already restored, when its format allows. */
interface ReadSnapshotFile {
  readonly snapshot: ProjectionSnapshot | RestoredSnapshot;
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
 * What the header says of the file: the format of its lines, and each list's count. In
 * `lines/2` a task is a short array that names its declaration by its place in a table of the
 * declarations' shared parts (below); `lines` (earlier versions) held every record whole, and is
 * still read.
 */
const LINES_FORMAT = "lines/2";
const WHOLE_LINES_FORMAT = "lines";

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

/** The fields that hold an instant: written as their place in the file's table of instants. */
const INSTANT_FIELDS: ReadonlySet<string> = new Set(["logicalDate", "prevIntervalStart", "nextRunDate"]);

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
 * Writes task records. Tasks declared alike (a schedule, an operator, a retry policy in common)
 * differ only in their key and parents, so a declaration is written once, with its key and
 * parents left out, and each task as
 * `[id, declaration's index, [parent ids], ...TASK_FIELDS, {other fields}?]`, its instants (the
 * same few for most tasks) as their places in a table of them: a fifth of its whole record, and
 * parsed in less than half the time. A record that would not read back exactly (fields in
 * another order, a key that is not its id) is written whole.
 */
class TaskLines {
  private readonly index = new Map<string, number>();
  /** The declarations' shared parts, as JSON, in the order of their indexes. */
  readonly specs: string[] = [];
  private readonly instantIndex = new Map<string, number>();
  /** The instants the tasks hold, in the order of their indexes. */
  readonly instants: string[] = [];

  private instant(text: string): number {
    let at = this.instantIndex.get(text);
    if (at === undefined) {
      at = this.instants.length;
      this.instantIndex.set(text, at);
      this.instants.push(text);
    }
    return at;
  }

  line(t: SnapshotTask): string {
    const compact = this.compact(t);
    return compact === null ? JSON.stringify(t) : JSON.stringify(compact);
  }

  private compact(t: SnapshotTask): unknown[] | null {
    const names = Object.keys(t);
    if (names[0] !== "key" || names[1] !== "id" || names[2] !== "spec") return null;
    for (const [i, f] of TASK_FIELDS.entries()) if (names[3 + i] !== f || t[f] === undefined) return null;
    if (keyText(t.key) !== t.id) return null;
    const spec = t.spec as TaskSpec;
    const specKey = spec.key;
    if (specKey !== t.key && keyText(specKey) !== t.id) return null;
    if (!Array.isArray(spec.parents)) return null;
    const parents: string[] = [];
    for (const p of spec.parents) {
      const text = keyText(p);
      if (text === null) return null;
      parents.push(text);
    }
    // The declaration with its key and parents held in their places (a spread keeps the order).
    const shared = JSON.stringify({ ...spec, key: null, parents: null });
    let at = this.index.get(shared);
    if (at === undefined) {
      at = this.specs.length;
      this.index.set(shared, at);
      this.specs.push(shared);
    }
    const record: unknown[] = [t.id, at, parents];
    for (const f of TASK_FIELDS) {
      const value = t[f];
      if (INSTANT_FIELDS.has(f)) {
        if (typeof value === "string") record.push(this.instant(value));
        else if (value === null && f === "prevIntervalStart") record.push(null);
        else return null;
      } else record.push(f === "revision" || f === "movedAt" ? counter(value as string) : value);
    }
    const rest: Record<string, unknown> = {};
    let extra = false;
    for (const name of names.slice(3 + TASK_FIELDS.length)) {
      const value = (t as unknown as Record<string, unknown>)[name];
      if (value === undefined) return null;
      rest[name] = value;
      extra = true;
    }
    if (extra) record.push(rest);
    return record;
  }
}

/** A revision or position (a bigint's digits) as a JSON number, when it is one exactly. */
function counter(digits: string): number | string {
  const n = Number(digits);
  return Number.isSafeInteger(n) && String(n) === digits ? n : digits;
}

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
  readonly tasks = new Map<string, TaskState>();
  /** parent id -> the ids of the tasks that name it, as the projection indexes them. */
  readonly children = new Map<string, Set<string>>();
  /** Keys named as parents before their task was read (or of tasks never declared). */
  private readonly early = new Map<string, TaskKey>();
  /** For whole records: one string for each instant. */
  private readonly held = new Interned<string>();
  private readonly instant = (text: string): string => this.held.of(text, text);
  /** Parts of keys that many tasks share: a project, an account, a partition. */
  private readonly keyParts = new Interned<string>();

  /** The file's tables: its declarations' shared parts and its instants. */
  constructor(
    private readonly specs: readonly Record<string, unknown>[],
    private readonly instants: readonly string[],
  ) {}

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
    const parts = id.split("/");
    if (parts.length !== KEY_FIELDS.length) throw new Error(`"${id}" is not a task id`);
    const [project, account, name, partition] = parts as [string, string, string, string];
    return {
      project: this.keyPart(project),
      account: this.keyPart(account),
      name,
      partition: this.keyPart(partition),
    };
  }

  private keyPart(text: string): string {
    return this.keyParts.of(text, text);
  }

  /** The instant at a place in the file's table. */
  private at(place: unknown): string {
    const text = Number.isInteger(place) ? this.instants[place as number] : undefined;
    if (text === undefined)
      throw new Error(`a task record names instant ${String(place)}, which the file does not hold`);
    return text;
  }

  read(line: string): void {
    const value = JSON.parse(line) as unknown;
    if (!Array.isArray(value)) {
      const task = taskFromSnapshot(value as SnapshotTask, this.instant);
      this.tasks.set(task.id, task);
      // A key that is not what its id says is not lent to the tasks that name the id.
      if (keyText(task.key) !== task.id && task.id.split("/").length === 4 && !this.early.has(task.id))
        this.early.set(task.id, this.keyOf(task.id));
      for (const p of task.spec.parents) addChild(this.children, formatTaskKey(p), task.id);
      return;
    }
    const [id, at, parents] = value as [string, number, string[]];
    const shared = Number.isInteger(at) ? this.specs[at] : undefined;
    if (typeof id !== "string" || shared === undefined || !Array.isArray(parents))
      throw new Error(`a task record names declaration ${String(at)}, which the file does not hold`);
    const length = 3 + TASK_FIELDS.length;
    const extras = value[length];
    if (
      value.length < length ||
      value.length > length + 1 ||
      (value.length === length + 1 && !isPlainObject(extras)) ||
      parents.some((p) => typeof p !== "string")
    )
      throw new Error(`the task record of ${id} is not one this version writes`);
    const key = this.own(id);
    const spec = { ...shared };
    spec.key = key;
    spec.parents = parents.length === 0 ? NO_PARENTS : parents.map((p) => this.parent(p));
    for (const p of parents) addChild(this.children, p, id);
    // The fields of TASK_FIELDS as one literal, the same shape for every task, then any others.
    const v = value as [string, number, string[], ...unknown[]];
    const prev = v[5];
    const task: TaskState = {
      key,
      id,
      spec: spec as unknown as TaskSpec,
      status: v[3] as TaskState["status"],
      logicalDate: this.at(v[4]),
      prevIntervalStart: prev === null ? null : this.at(prev),
      nextRunDate: this.at(v[6]),
      failure: v[7] as TaskState["failure"],
      backfill: v[8] as TaskState["backfill"],
      revision: BigInt(v[9] as number | string),
      movedAt: BigInt(v[10] as number | string),
    };
    if (extras !== undefined) Object.assign(task, extras);
    this.tasks.set(id, task);
  }
}

/** Records are joined into pieces of about this many characters before they are written. */
const PIECE_CHARS = 1 << 20;

/**
 * The snapshot as pieces of text, made at once (the projection keeps changing after): each a
 * run of whole lines, so no piece approaches the engine's longest string.
 */
export function snapshotPieces(body: SnapshotFile, pieceChars = PIECE_CHARS): string[] {
  const { snapshot, headHash } = body;
  const counts: Record<string, number> = {};
  for (const list of SNAPSHOT_LISTS) counts[list] = snapshot[list].length;
  // The tasks first, so that the table of their declarations is known for the header.
  const tasks = new TaskLines();
  const taskLines = snapshot.tasks.map((t) => tasks.line(t));
  const header: Record<string, unknown> = {
    ...snapshot,
    headHash,
    lines: LINES_FORMAT,
    taskFields: TASK_FIELDS,
    specs: tasks.specs.length,
    instants: tasks.instants.length,
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
  for (const line of taskLines) add(line);
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
 * parts and joined once, so a file of one long line (an older snapshot) costs its length, not
 * its square. Stopping early (`return`, or an error in the reader) closes the file.
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
 * Reads a snapshot file: lines of records after a header, or a file of one JSON document (as
 * snapshots were written before). A file cut short, or with lines over or under its counts, is
 * refused with the reason.
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

async function parseSnapshotLines(lines: AsyncGenerator<string>): Promise<ReadSnapshotFile> {
  const first = await lines.next();
  if (first.done) throw new Error("the file is empty");
  const header = JSON.parse(first.value) as Record<string, unknown>;
  if (header.lines !== LINES_FORMAT && header.lines !== WHOLE_LINES_FORMAT) {
    // One JSON document: the whole snapshot on its only line.
    if ((await lines.next()).done !== true) throw new Error("text after the snapshot's document");
    return header as unknown as SnapshotFile;
  }
  const counts = header.counts as Record<SnapshotList, number>;
  const snapshot: Record<string, unknown> = { ...header };
  for (const name of ["lines", "counts", "headHash", "taskFields", "specs", "instants"])
    delete snapshot[name];
  const count = (n: unknown, what: string): number => {
    if (!Number.isInteger(n) || (n as number) < 0) throw new Error(`the header has no count of ${what}`);
    return n as number;
  };
  const specs: Record<string, unknown>[] = [];
  const instants: string[] = [];
  if (header.lines === LINES_FORMAT) {
    const n = count(header.specs, "declarations");
    if (!Array.isArray(header.taskFields) || !header.taskFields.every((f) => typeof f === "string"))
      throw new Error("the header does not name the tasks' fields");
    const fields = header.taskFields as string[];
    if (fields.length !== TASK_FIELDS.length || fields.some((f, i) => f !== TASK_FIELDS[i]))
      throw new Error(`the tasks' fields (${fields.join(", ")}) are not the ones this version reads`);
    for (let i = 0; i < n; i++) {
      const line = await lines.next();
      if (line.done) throw new Error(`the file ends after ${i} of its ${n} declarations`);
      const spec = JSON.parse(line.value) as unknown;
      if (!isPlainObject(spec)) throw new Error(`declaration ${i} is not an object`);
      specs.push(spec);
    }
    const m = count(header.instants, "instants");
    for (let i = 0; i < m; i++) {
      const line = await lines.next();
      if (line.done) throw new Error(`the file ends after ${i} of its ${m} instants`);
      const instant = JSON.parse(line.value) as unknown;
      if (typeof instant !== "string") throw new Error(`instant ${i} is not a string`);
      instants.push(instant);
    }
  }
  const tasks = new TaskReader(specs, instants);
  for (const list of SNAPSHOT_LISTS) {
    const n = count(counts?.[list], list);
    const records: unknown[] = [];
    for (let i = 0; i < n; i++) {
      const line = await lines.next();
      if (line.done) throw new Error(`the file ends after ${i} of its ${n} ${list}`);
      if (list === "tasks") tasks.read(line.value);
      else records.push(JSON.parse(line.value));
    }
    snapshot[list] = list === "tasks" ? tasks.tasks : records;
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
