/*
 * The snapshot file's layout, `lines/4`: a header line (the snapshot without its lists, the
 * hash of the log's event at its position, the count of each list's records), the table of the
 * declarations' shared parts and the table of instants (a line each), the tasks in blocks of
 * columns (a line per block, see columns.ts), then a line of JSON per other record, and last the
 * index of the tasks by key with the byte offsets of every part (see key-index.ts), which lets a
 * read of a few tasks decode only their blocks. It is written and read a line at a time, never as
 * one string. `lines/3` is the same without the index: it is still read whole.
 */

import { type ProjectionSnapshot, type RestoredSnapshot, SNAPSHOT_FORMAT } from "@chronolog/core";
import { ColumnReader } from "./column-reader.js";
import { ColumnWriter } from "./column-writer.js";
import { isPlainObject, TASK_BLOCK, TASK_FIELDS } from "./columns.js";
import { checkIndexEnd, INDEX_MARK, KeyIndexWriter } from "./key-index.js";
import { linesOf } from "./lines-of.js";

export interface SnapshotFile {
  readonly snapshot: ProjectionSnapshot;
  /** Hash of the log's event at the snapshot's position: proves the snapshot belongs to this log. */
  readonly headHash: string | null;
}

/** A snapshot file as read: its tasks already restored. */
export interface ReadSnapshotFile {
  readonly snapshot: RestoredSnapshot;
  /** Hash of the log's event at the snapshot's position: proves the snapshot belongs to this log. */
  readonly headHash: string | null;
}

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
  "durations",
] as const satisfies ReadonlyArray<keyof ProjectionSnapshot>;

type SnapshotList = (typeof SNAPSHOT_LISTS)[number];

/**
 * The layout of the file's lines, as its header names it (`lines`). In `lines/3` the tasks are
 * written in blocks of columns, a task naming its declaration by its place in a table of
 * the declarations' shared parts; `lines/4` adds the index of the tasks by key after the last
 * record. These two are read: the ones before (`lines/2`, a short array per task; `lines`, every
 * record whole; one JSON document) were written only with snapshot formats before
 * SNAPSHOT_FORMAT 8, which are refused anyway.
 */
export const LAYOUT = "lines/4";
const LAYOUTS_READ: readonly unknown[] = [LAYOUT, "lines/3"];

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
  const tasks = new ColumnWriter(blockSize);
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
  let lines: string[] = [];
  let chars = 0;
  // Where the next line starts in the file, in bytes (the index names the parts by offset).
  let at = 0;
  const add = (line: string) => {
    lines.push(line);
    chars += line.length + 1;
    at += Buffer.byteLength(line) + 1;
    if (chars >= pieceChars) {
      pieces.push(`${lines.join("\n")}\n`);
      lines = [];
      chars = 0;
    }
  };
  add(JSON.stringify(header));
  const index = new KeyIndexWriter(snapshot, blockSize, tasks);
  index.parts.specsAt = at;
  for (const spec of tasks.specs) add(spec);
  for (const instant of tasks.instants) add(JSON.stringify(instant));
  for (const [i, line] of tasks.lines.entries()) {
    index.block(i, at, Buffer.byteLength(line));
    add(line);
  }
  index.parts.listsAt = at;
  for (const list of SNAPSHOT_LISTS) {
    if (list === "tasks") continue;
    if (list === "cacheKeys") index.parts.cacheKeysAt = at;
    for (const record of snapshot[list]) add(JSON.stringify(record));
  }
  index.parts.indexAt = at;
  add(INDEX_MARK);
  for (const line of index.chunkLines()) {
    index.chunk(at, Buffer.byteLength(line));
    add(line);
  }
  // The trailer: the parts' offsets, then, alone on the last line, where the trailer starts.
  const trailerAt = at;
  add(JSON.stringify(index.trailer()));
  add(JSON.stringify({ trailer: trailerAt }));
  if (lines.length > 0) pieces.push(`${lines.join("\n")}\n`);
  return pieces;
}

/**
 * Reads a snapshot file: lines of records after a header. A file of another snapshot format or
 * layout, cut short, or with lines over or under its counts, is refused with the reason.
 */
export async function parseSnapshotFile(path: string): Promise<ReadSnapshotFile> {
  const lines = linesOf(path);
  try {
    const read = await parseSnapshotLines(lines);
    // The index, which the whole read skips, is there and whole: the file was not cut short.
    if (read.indexed) checkIndexEnd(path);
    return read;
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
  if (LAYOUTS_READ.includes(header.lines)) return null;
  const layout = document ? "one JSON document" : JSON.stringify(header.lines ?? null);
  return `snapshot layout ${layout} is not ${LAYOUTS_READ.join(" or ")}, the ones this version reads`;
}

async function parseSnapshotLines(
  lines: AsyncGenerator<string>,
): Promise<ReadSnapshotFile & { indexed: boolean }> {
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
  const tasks = new ColumnReader(specs, instants, Math.min(claimed, blocks * TASK_BLOCK));
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
  // The index follows the records in `lines/4`: a whole read needs none of it.
  const after = await lines.next();
  if (header.lines === LAYOUT ? after.value !== INDEX_MARK : after.done !== true)
    throw new Error("lines after the last record the header counts");
  return {
    snapshot: snapshot as unknown as RestoredSnapshot,
    headHash: header.headHash as string | null,
    indexed: header.lines === LAYOUT,
  };
}
