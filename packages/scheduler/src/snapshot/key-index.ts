/*
 * The index a `lines/4` checkpoint ends with, so that a read about a few tasks (`why`, `task`, a
 * page of `tasks`) decodes only their blocks, not the whole catalogue:
 *
 *   the index mark (a line), then the entries in key order, INDEX_CHUNK to a line: each
 *   `[id, place, children, durations, cacheKeys]` (the last three left off when empty), for
 *   every id the checkpoint names: a task (its place in the file), a parent never declared
 *   (place -1); `children` the places of the tasks that name it as a parent; `durations` and
 *   `cacheKeys` its records of those lists (which come after every other record of the file,
 *   so a reader of a few tasks skips them);
 *   the trailer (a line): the byte offsets of the tables, of each block of tasks, of the other
 *   records and of each line of entries with the first id it holds;
 *   the last line: `{"trailer": <its byte offset>}`.
 *
 * A reader opens the file once and reads every part from that one handle by offset: a
 * checkpoint renamed over it meanwhile (a running `chronolog up`) does not change what it reads.
 */

import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import {
  type DeclaredSpec,
  NO_PARENTS,
  type ProjectionSnapshot,
  type SnapshotTask,
  type TaskKey,
  type TaskState,
  taskFromSnapshot,
} from "@chronolog/core";
import { BlockRows, ParsedRows } from "./block-rows.js";
import { blockKey, parseBlock, taskOfRow } from "./column-reader.js";
import type { ColumnWriter } from "./column-writer.js";
import { isPlainObject, TASK_FIELDS } from "./columns.js";

/** The line between the file's records and its index. */
export const INDEX_MARK = '"index"';

/** Entries of the index on one line. */
export const INDEX_CHUNK = 256;

/** One id of the index: a task's place (-1: no task), its children's places, its records. */
export interface IndexEntry {
  readonly id: string;
  readonly place: number;
  readonly children: readonly number[];
  readonly durations: readonly number[] | null;
  readonly cacheKeys: readonly string[] | null;
}

/** The offsets the trailer gives. */
interface Trailer {
  readonly blockSize: number;
  readonly tasks: number;
  readonly specsAt: number;
  readonly listsAt: number;
  readonly cacheKeysAt: number;
  readonly indexAt: number;
  /** Each block of tasks: [offset, bytes]. */
  readonly blocks: ReadonlyArray<readonly [number, number]>;
  /** Each line of entries: [first id, offset, bytes]. */
  readonly chunks: ReadonlyArray<readonly [string, number, number]>;
}

type RawEntry = [string, number, (number[] | 0)?, (number[] | 0)?, string[]?];

/**
 * Makes the index of a snapshot while its file is written. Each checkpoint of `up` pays for it,
 * so it takes what the column writer found as it wrote the tasks (each task's place, the places
 * of its children) and makes no map by id of its own: the entries are the tasks' places and the
 * other ids, sorted by id, each line of entries written as text (no array made per id).
 */
export class KeyIndexWriter {
  readonly parts = { specsAt: 0, listsAt: 0, cacheKeysAt: 0, indexAt: 0 };
  private readonly blocks: Array<[number, number]> = [];
  private readonly chunks: Array<[string, number, number]> = [];
  /** Ids of the tasks (by place), then the other ids the checkpoint names. */
  private readonly ids: string[];
  private readonly tasks: number;
  /** The entries: places in `ids`, in the order of their ids. */
  private readonly sorted: number[];
  private readonly durations = new Map<string, readonly number[]>();
  private readonly cacheKeys = new Map<string, readonly string[]>();

  constructor(
    snapshot: ProjectionSnapshot,
    private readonly blockSize: number,
    private readonly written: ColumnWriter,
  ) {
    const { tasks } = snapshot;
    const ids: string[] = new Array(tasks.length);
    for (let i = 0; i < tasks.length; i++) ids[i] = (tasks[i] as SnapshotTask).id;
    this.tasks = tasks.length;
    const isTask = (id: string) => written.places.has(id) || written.wholeIds.has(id);
    const others = new Set<string>();
    const other = (id: string) => {
      if (!others.has(id) && !isTask(id)) {
        others.add(id);
        ids.push(id);
      }
    };
    for (const id of written.childrenById.keys()) other(id);
    for (const [id, ms] of snapshot.durations) {
      this.durations.set(id, ms);
      other(id);
    }
    for (const [id, keys] of snapshot.cacheKeys) {
      this.cacheKeys.set(id, keys);
      other(id);
    }
    this.ids = ids;
    const sorted: number[] = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) sorted[i] = i;
    // As `ids.sort()` orders them: by UTF-16 code units.
    this.sorted = sorted.sort((a, b) => {
      const x = ids[a] as string;
      const y = ids[b] as string;
      return x < y ? -1 : x > y ? 1 : 0;
    });
  }

  /** The places of the tasks naming an id as a parent, in order. */
  private childrenOf(id: string, place: number): number[] | undefined {
    const byPlace = place >= 0 ? this.written.childrenByPlace[place] : undefined;
    if (this.written.childrenById.size === 0) return byPlace;
    const byId = this.written.childrenById.get(id);
    if (byId === undefined || byPlace === undefined) return byId ?? byPlace;
    // Those named by id come first: the tasks before a parent written later, or every child of
    // a task written whole.
    return [...byId, ...byPlace].sort((a, b) => a - b);
  }

  /** One entry as its line holds it: `[id, place, children, durations, cacheKeys]`, cut short. */
  private entryText(entry: number): string {
    const id = this.ids[entry] as string;
    const place = entry < this.tasks ? entry : -1;
    const children = this.childrenOf(id, place);
    const durations = this.durations.size === 0 ? undefined : this.durations.get(id);
    const cacheKeys = this.cacheKeys.size === 0 ? undefined : this.cacheKeys.get(id);
    let text = `[${JSON.stringify(id)},${place}`;
    if (children || durations || cacheKeys) text += `,${children ? `[${children.join(",")}]` : 0}`;
    if (durations || cacheKeys) text += `,${durations ? JSON.stringify(durations) : 0}`;
    if (cacheKeys) text += `,${JSON.stringify(cacheKeys)}`;
    return `${text}]`;
  }

  block(i: number, offset: number, bytes: number): void {
    this.blocks[i] = [offset, bytes];
  }

  chunk(offset: number, bytes: number): void {
    const first = this.ids[this.sorted[this.chunks.length * INDEX_CHUNK] as number] as string;
    this.chunks.push([first, offset, bytes]);
  }

  *chunkLines(): Generator<string> {
    for (let i = 0; i < this.sorted.length; i += INDEX_CHUNK) {
      const texts: string[] = [];
      const end = Math.min(i + INDEX_CHUNK, this.sorted.length);
      for (let k = i; k < end; k++) texts.push(this.entryText(this.sorted[k] as number));
      yield `[${texts.join(",")}]`;
    }
  }

  trailer(): Trailer {
    return {
      blockSize: this.blockSize,
      tasks: this.tasks,
      ...this.parts,
      blocks: this.blocks,
      chunks: this.chunks,
    };
  }
}

/**
 * A `lines/4` checkpoint read by parts: its header, tables and small lists whole, its tasks and
 * their per-task records one id or one place at a time. Anything malformed throws, with why.
 */
export class KeyIndexReader {
  private readonly fd: number;
  private readonly trailer: Trailer;
  /** The header line, the tables, the records but the per-task ones, as read. */
  readonly headerText: string;
  readonly specs: Record<string, unknown>[] = [];
  readonly instants: string[] = [];
  /** The records of the lists before `cacheKeys`, each line as text. */
  readonly listLines: string[];
  private readonly chunkTexts = new Map<number, string>();
  private readonly chunks = new Map<number, RawEntry[]>();
  private readonly blocks = new Map<number, BlockRows | ParsedRows>();
  private readonly decoded = new Map<number, TaskState>();
  /** Blocks of tasks parsed so far. */
  blocksRead = 0;

  private constructor(fd: number) {
    this.fd = fd;
    const size = fstatSync(fd).size;
    const { at, last } = trailerAt(fd, size);
    const trailer = JSON.parse(this.text(at, size - at - last - 1)) as Trailer;
    if (!isPlainObject(trailer) || !Array.isArray(trailer.blocks) || !Array.isArray(trailer.chunks))
      throw new Error("the index's trailer is not one");
    this.trailer = trailer;
    // The header and the tables: up to the first block of tasks.
    const lines = this.text(0, trailer.blocks[0]?.[0] ?? trailer.listsAt).split("\n");
    this.headerText = lines[0] as string;
    const header = JSON.parse(this.headerText) as Record<string, unknown>;
    const fields = header.taskFields;
    if (!Array.isArray(fields) || fields.join() !== TASK_FIELDS.join())
      throw new Error("the tasks' fields are not the ones this version reads");
    const nSpecs = header.specs as number;
    const nInstants = header.instants as number;
    for (let i = 1; i <= nSpecs; i++) this.specs.push(JSON.parse(lines[i] as string));
    for (let i = 1 + nSpecs; i <= nSpecs + nInstants; i++) this.instants.push(JSON.parse(lines[i] as string));
    const listsText = this.text(trailer.listsAt, trailer.cacheKeysAt - trailer.listsAt);
    this.listLines = listsText.length === 0 ? [] : listsText.slice(0, -1).split("\n");
  }

  /** The checkpoint's index, or why it has none this version reads. */
  static open(path: string): KeyIndexReader {
    const fd = openSync(path, "r");
    try {
      return new KeyIndexReader(fd);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  close(): void {
    closeSync(this.fd);
  }

  private text(offset: number, bytes: number): string {
    return textAt(this.fd, offset, bytes);
  }

  /** A line of entries, as its text. */
  private chunkText(i: number): string {
    let text = this.chunkTexts.get(i);
    if (text === undefined) {
      const [, offset, bytes] = this.trailer.chunks[i] as readonly [string, number, number];
      text = this.text(offset, bytes);
      this.chunkTexts.set(i, text);
    }
    return text;
  }

  /** A line of entries, parsed. */
  private chunk(i: number): RawEntry[] {
    let held = this.chunks.get(i);
    if (held === undefined) {
      held = JSON.parse(this.chunkText(i)) as RawEntry[];
      if (!Array.isArray(held)) throw new Error("a line of the index is not a list");
      this.chunks.set(i, held);
    }
    return held;
  }

  /** The line of entries `id` would be in. */
  private chunkOf(id: string): number {
    const { chunks } = this.trailer;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((chunks[mid] as readonly [string, number, number])[0] <= id) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** What the checkpoint holds of `id` (null: it names no such id). */
  entry(id: string): IndexEntry | null {
    const c = this.chunkOf(id);
    if (c < 0) return null;
    const entries = this.chunks.get(c);
    let e: RawEntry | undefined;
    if (entries !== undefined) {
      let lo = 0;
      let hi = entries.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((entries[mid] as RawEntry)[0] < id) lo = mid + 1;
        else hi = mid;
      }
      e = entries[lo];
    } else e = entryIn(this.chunkText(c), id);
    if (e === undefined || e[0] !== id) return null;
    return {
      id,
      place: e[1],
      children: e[2] || [],
      durations: e[3] || null,
      cacheKeys: e[4] ?? null,
    };
  }

  /** The ids of the first `count` tasks whose id sorts after `after`, in order. */
  idsAfter(after: string | undefined, count: number): string[] {
    const out: string[] = [];
    for (
      let c = after === undefined ? 0 : Math.max(0, this.chunkOf(after));
      c < this.trailer.chunks.length;
      c++
    )
      for (const e of this.chunk(c)) {
        if (e[1] < 0 || (after !== undefined && e[0] <= after)) continue;
        out.push(e[0]);
        if (out.length >= count) return out;
      }
    return out;
  }

  private block(n: number): BlockRows | ParsedRows {
    let held = this.blocks.get(n);
    if (held === undefined) {
      const at = this.trailer.blocks[n];
      if (at === undefined) throw new Error(`the index names block ${n}, which the file does not hold`);
      const line = this.text(at[0], at[1]);
      // Its rows one at a time, or, a block of another kind, parsed whole.
      held = BlockRows.of(line) ?? new ParsedRows(parseBlock(line));
      this.blocks.set(n, held);
      this.blocksRead += 1;
    }
    return held;
  }

  /** The block and the place in it of a task's place in the file. */
  private where(place: number): { rows: BlockRows | ParsedRows; i: number } {
    const { blockSize } = this.trailer;
    const rows = this.block(Math.floor(place / blockSize));
    const i = place % blockSize;
    if (i >= rows.n) throw new Error(`the index names task ${place}, which the file does not hold`);
    return { rows, i };
  }

  /** The task at a place of the file, as the whole read restores it. */
  taskAt(place: number): TaskState {
    let task = this.decoded.get(place);
    if (task === undefined) {
      task = this.decode(place);
      this.decoded.set(place, task);
    }
    return task;
  }

  /** The key of the task at a place of the file, which a task written after it names. */
  private keyAt(place: number): TaskKey {
    const held = this.decoded.get(place);
    if (held !== undefined) return held.key;
    const { rows, i } = this.where(place);
    const id = rows.id(i);
    if (typeof id !== "string") throw new Error("a block of tasks holds an id that is not a string");
    return blockKey(rows.keyOf(i), 0, id);
  }

  private decode(place: number): TaskState {
    const { rows, i } = this.where(place);
    // The task alone, as a block of one.
    const b = rows.row(i);
    if (b.decl[0] === -1) {
      const whole = b.whole[0];
      if (!isPlainObject(whole)) throw new Error("a task record written whole is not an object");
      return taskFromSnapshot(whole as unknown as SnapshotTask, (text) => text);
    }
    const id = b.id[0];
    if (typeof id !== "string") throw new Error("a block of tasks holds an id that is not a string");
    const decl = b.decl[0];
    const shared = typeof decl === "number" ? this.specs[decl] : undefined;
    if (shared === undefined)
      throw new Error(`a task record names declaration ${decl}, which the file does not hold`);
    const count = b.parents[0] as number;
    let parents: TaskKey[] = NO_PARENTS;
    if (count > 0) {
      parents = new Array(count);
      for (let j = 0; j < count; j++) {
        const r = b.parentRefs[j];
        if (typeof r === "number") {
          if (!Number.isInteger(r) || r < 0 || r >= place)
            throw new Error(`${id} names as a parent task ${r}, which was not written before it`);
          parents[j] = this.keyAt(r);
        } else if (typeof r === "string") parents[j] = keyOf(r);
        else throw new Error(`${id} names a parent that is not a task`);
      }
    }
    return taskOfRow(b, 0, blockKey(b, 0, id), id, shared as unknown as DeclaredSpec, parents, this.instants);
  }
}

/**
 * The entry of `id` in a line of entries, found in its text: only that entry is parsed, not the
 * line's 256 (with their children and records). An entry is the only array of the line that
 * starts with a string and a number (its children and durations hold numbers, its cache keys
 * strings), and the text `["<id>",` starts nowhere inside a string, where a quote is escaped.
 */
function entryIn(line: string, id: string): RawEntry | undefined {
  const start = `[${JSON.stringify(id)},`;
  for (let p = line.indexOf(start); p >= 0; p = line.indexOf(start, p + 1)) {
    const e = JSON.parse(line.slice(p, arrayEnd(line, p))) as RawEntry;
    if (e[0] === id && typeof e[1] === "number") return e;
  }
  return undefined;
}

/** Just past the JSON array that opens at `p`, its strings skipped whole. */
function arrayEnd(text: string, p: number): number {
  let depth = 0;
  for (let q = p; q < text.length; q++) {
    const c = text.charCodeAt(q);
    if (c === 34) {
      // A string: to its closing quote, the first not escaped (after an even run of backslashes).
      for (;;) {
        q = text.indexOf('"', q + 1);
        if (q < 0) throw new Error("a line of the index is cut short");
        let b = q - 1;
        while (text.charCodeAt(b) === 92) b -= 1;
        if ((q - 1 - b) % 2 === 0) break;
      }
    } else if (c === 91) depth += 1;
    else if (c === 93 && --depth === 0) return q + 1;
  }
  throw new Error("a line of the index is cut short");
}

function keyOf(id: string): TaskKey {
  const parts = id.split("/");
  if (parts.length !== 4) throw new Error(`"${id}" is not a task id`);
  const [project, account, name, partition] = parts as [string, string, string, string];
  return { project, account, name, partition };
}

function textAt(fd: number, offset: number, bytes: number): string {
  const buf = Buffer.allocUnsafe(bytes);
  let got = 0;
  while (got < bytes) {
    const n = readSync(fd, buf, got, bytes - got, offset + got);
    if (n === 0) throw new Error("the file is cut short of what its index names");
    got += n;
  }
  return buf.toString("utf8");
}

/** Where the trailer starts, from the file's last line (and that line's length in bytes). */
function trailerAt(fd: number, size: number): { at: number; last: number } {
  const tailBytes = Math.min(size, 256);
  const tail = textAt(fd, size - tailBytes, tailBytes);
  const last = tail.endsWith("\n") ? tail.slice(tail.lastIndexOf("\n", tail.length - 2) + 1, -1) : "";
  let at: unknown;
  try {
    at = (JSON.parse(last) as { trailer?: unknown }).trailer;
  } catch {
    at = undefined;
  }
  if (typeof at !== "number" || !Number.isSafeInteger(at) || at < 0 || at >= size)
    throw new Error("the file does not end with its index");
  return { at, last: Buffer.byteLength(last) };
}

/** Throws unless the file ends as a `lines/4` file does (whole, its index last). */
export function checkIndexEnd(path: string): void {
  const fd = openSync(path, "r");
  try {
    trailerAt(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}
