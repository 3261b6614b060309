import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { instanceStream, SchedulerProjection, SNAPSHOT_FORMAT } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import {
  catchUp,
  declare,
  linesOf,
  loadProjection,
  SNAPSHOT_FILE,
  saveSnapshot,
  snapshotPieces,
} from "@chronolog/scheduler";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * The checkpoint file (`lines/3`): a header line, the table of the declarations' shared parts
 * and the table of instants (a line each), the tasks in blocks of columns (a line per block of
 * up to 4096 tasks), then a line of JSON per other record, so that no snapshot has to be one
 * string (a million tasks' would be longer than the engine's longest). Each case writes a real
 * checkpoint of a real SQLite log and restores from it as `chronolog up` does.
 */
let dir: string;
let log: EventLog;

const TASKS = 40;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-checkpoint-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  const tasks = Array.from({ length: TASKS }, (_, i) => ({
    project: `p${i % 4}`,
    account: "acme",
    name: `t${i}`,
    cron: "0 * * * *",
    startDate: "2026-11-30T00:00:00Z",
    operator: { type: "noop" },
    parents: i >= 4 ? [`p${(i - 1) % 4}/acme/t${i - 1}`] : [],
  }));
  const projection = new SchedulerProjection();
  await declare(log, projection, [{ filename: "tasks.json", document: { tasks } }], Date.now());
  // An instance too, so that more than one list has records.
  await log.append(
    instanceStream(
      { project: "p0", account: "acme", name: "t0", partition: "ALL" },
      "2026-11-30T00:00:00.000Z",
    ),
    [
      {
        type: "DispatchIntended",
        data: {
          key: { project: "p0", account: "acme", name: "t0", partition: "ALL" },
          logicalDate: "2026-11-30T00:00:00.000Z",
          attempt: 1,
          token: "token-0001",
          operator: { type: "noop" },
          idempotent: true,
          leaseSeconds: 30,
        },
      },
    ],
    { expectedRevision: "no_stream" },
  );
});

afterEach(async () => {
  await log?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function checkpointed(): Promise<SchedulerProjection> {
  const projection = new SchedulerProjection();
  await catchUp(log, projection);
  await saveSnapshot(dir, log, projection);
  return projection;
}

const snapshotPath = () => join(dir, SNAPSHOT_FILE);

/** Pauses task t6 with a reason: a field past a task's usual ones. */
async function pauseT6(): Promise<void> {
  await log.append(
    "task-p2/acme/t6/ALL",
    [
      {
        type: "TaskPaused",
        data: { key: { project: "p2", account: "acme", name: "t6", partition: "ALL" }, reason: "held" },
      },
    ],
    { expectedRevision: "exists" },
  );
}

/** A block of tasks as its line holds it: a column per field, each as long as `id`. */
interface Block {
  id: string[];
  decl: number[];
  parents: number[];
  parentRefs: Array<number | string>;
  status: string[];
  logicalDate: Array<number | string>;
  prevIntervalStart: Array<number | null>;
  nextRunDate: number[];
  failure: unknown[];
  backfill: unknown[];
  revision: Array<number | string>;
  movedAt: Array<number | string>;
  extras: Record<string, unknown>;
  whole: Record<string, unknown>;
}

/** The columns as long as the ids. */
const COLUMNS = [
  "id",
  "decl",
  "parents",
  "status",
  "logicalDate",
  "prevIntervalStart",
  "nextRunDate",
  "failure",
  "backfill",
  "revision",
  "movedAt",
] as const;

/** The columns written `{ "same": value }` when every task of the block holds that value. */
const SAME_COLUMNS = [
  "decl",
  "parents",
  "status",
  "logicalDate",
  "prevIntervalStart",
  "nextRunDate",
  "failure",
  "backfill",
  "revision",
] as const;

/** A block as its line holds it, its columns of one value filled in as the reader does. */
function expandBlock(line: string): Block {
  const b = JSON.parse(line) as Record<string, unknown>;
  const n = (b.id as string[]).length;
  for (const c of SAME_COLUMNS) {
    const column = b[c];
    if (!Array.isArray(column)) b[c] = new Array(n).fill((column as { same: unknown }).same);
  }
  return b as unknown as Block;
}

/** The file's lines, its header, where its blocks of tasks start, and the blocks. */
function layout(text: string) {
  const lines = text.split("\n");
  const header = JSON.parse(lines[0] as string);
  const first = 1 + header.specs + header.instants;
  const blocks = lines.slice(first, first + header.blocks).map(expandBlock);
  const instants = lines.slice(1 + header.specs, first).map((l) => JSON.parse(l) as string);
  return { lines, header, first, blocks, instants };
}

/**
 * Where a task is in the blocks: its block, its place in it (`i`), its place in the file's task
 * order, and its parents' references (from `refAt` in its block's `parentRefs`).
 */
function placeOf(blocks: Block[], id: string) {
  let before = 0;
  for (const [n, b] of blocks.entries()) {
    const i = b.id.indexOf(id);
    if (i >= 0) {
      const refAt = b.parents.slice(0, i).reduce((a, c) => a + c, 0);
      const refs = b.parentRefs.slice(refAt, refAt + (b.parents[i] as number));
      return { block: n, b, i, place: before + i, refAt, refs };
    }
    before += b.id.length;
  }
  throw new Error(`no task ${id} in the blocks`);
}

/** Writes the checkpoint of `written` in blocks of `blockSize` tasks, as `saveSnapshot` would. */
async function writeInBlocks(written: SchedulerProjection, blockSize: number): Promise<string> {
  const [at] = await log.readAllStored({ fromPosition: written.position, maxCount: 1 });
  const body = { snapshot: written.toSnapshot(), headHash: at?.metadata.hash ?? null };
  const text = snapshotPieces(body, 1 << 20, blockSize).join("");
  writeFileSync(snapshotPath(), text);
  return text;
}

describe("the checkpoint file", () => {
  it("is a header line, the tables of declarations and instants, the tasks in blocks of columns and a line per other record, and restores the projection it was written from", async () => {
    const written = await checkpointed();
    const { lines, header, first, blocks, instants } = layout(readFileSync(snapshotPath(), "utf8"));
    expect(lines.at(-1)).toBe(""); // every line ends
    expect(header.lines).toBe("lines/3");
    expect(header.counts.tasks).toBe(TASKS);
    expect(header.counts.instances).toBe(1);
    expect(header.position).toBe(written.position.toString());
    const records = Object.values(header.counts as Record<string, number>).reduce((a, b) => a + b, 0);
    // The tasks are declared alike: their declaration's shared parts are written once.
    expect(header.specs).toBe(1);
    // And the instants they hold, a table of the few values.
    expect(header.instants).toBeGreaterThan(0);
    expect(header.instants).toBeLessThan(5);
    // 40 tasks are one block (a block holds up to 4096); the other lists a line per record.
    expect(header.blocks).toBe(1);
    expect(lines.length).toBe(first + header.blocks + (records - TASKS) + 1);
    const [block] = blocks as [Block];
    for (const c of COLUMNS) expect(block[c], c).toHaveLength(TASKS);
    // A column of one value is written as that value: every task names declaration 0, holds no
    // failure and no backfill; the ids and positions are columns.
    const raw = JSON.parse(lines[first] as string);
    expect([raw.decl, raw.failure, raw.backfill]).toEqual([{ same: 0 }, { same: null }, { same: null }]);
    expect(raw.id).toHaveLength(TASKS);
    expect(raw.movedAt).toHaveLength(TASKS);
    // None written whole, none with fields past the usual ones: all name declaration 0.
    expect(new Set(block.decl)).toEqual(new Set([0]));
    expect(block.whole).toEqual({});
    expect(block.extras).toEqual({});
    // Each parent is written before its child, so each is named by its number: t0..t3 have none.
    expect(block.parentRefs).toHaveLength(TASKS - 4);
    for (const r of block.parentRefs) expect(typeof r).toBe("number");
    // A task names its declaration by place, its parent by its place in the file, its instants
    // by their places in the table.
    const t4 = placeOf(blocks, "p0/acme/t4/ALL");
    const t5 = placeOf(blocks, "p1/acme/t5/ALL");
    expect(block.decl[t5.i]).toBe(0);
    expect(t5.refs).toEqual([t4.place]);
    expect(block.id[t4.place]).toBe("p0/acme/t4/ALL");
    const task = written.toSnapshot().tasks.find((t) => t.id === "p1/acme/t5/ALL");
    if (!task) throw new Error("no task t5");
    expect(instants[block.logicalDate[t5.i] as number]).toBe(task.logicalDate);
    expect(instants[block.nextRunDate[t5.i] as number]).toBe(task.nextRunDate);
    const prev = block.prevIntervalStart[t5.i];
    expect(prev === null || prev === undefined ? prev : instants[prev]).toBe(task.prevIntervalStart);
    expect(block.status[t5.i]).toBe(task.status);
    expect(block.failure[t5.i]).toEqual(task.failure);
    expect(block.backfill[t5.i]).toEqual(task.backfill);
    expect(block.revision[t5.i]).toBe(Number(task.revision));
    expect(block.movedAt[t5.i]).toBe(Number(task.movedAt));

    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.snapshotPosition).toBe(written.position);
    expect(loaded.replayed).toBe(0);
    expect(loaded.projection.toSnapshot()).toEqual(written.toSnapshot());

    // In blocks of 16: three (16, 16 and 8 tasks), a parent in the block before still named by
    // its number, its place in the file.
    const small = layout(await writeInBlocks(written, 16));
    expect(small.header.lines).toBe("lines/3");
    expect(small.header.blocks).toBe(3);
    expect(small.blocks.map((b) => b.id.length)).toEqual([16, 16, 8]);
    for (const b of small.blocks) for (const c of COLUMNS) expect(b[c], c).toHaveLength(b.id.length);
    expect(small.lines.length).toBe(small.first + 3 + (records - TASKS) + 1);
    const t15 = placeOf(small.blocks, "p3/acme/t15/ALL");
    const t16 = placeOf(small.blocks, "p0/acme/t16/ALL");
    expect([t15.block, t15.place, t16.block, t16.place]).toEqual([0, 15, 1, 16]);
    expect(t16.refs).toEqual([15]);
    const again = await loadProjection(log, dir);
    expect(again.discarded).toBeNull();
    expect(again.snapshotPosition).toBe(written.position);
    expect(again.replayed).toBe(0);
    expect(again.projection.toSnapshot()).toEqual(written.toSnapshot());
    expect(JSON.stringify(again.projection.toSnapshot())).toBe(JSON.stringify(written.toSnapshot()));
  });

  it("restores tasks that share a declaration's parts, and writes whole the records it cannot shorten", async () => {
    // A pause with a reason, a second declaration, a task whose parent is not declared.
    await pauseT6();
    const extra = {
      tasks: [
        {
          project: "q",
          account: "acme",
          name: "other",
          cron: "*/5 * * * *",
          startDate: "2026-11-30T00:00:00Z",
          operator: { type: "shell", command: "true" },
          parents: ["nowhere/acme/missing"],
        },
      ],
    };
    const projection = new SchedulerProjection();
    await catchUp(log, projection);
    await declare(log, projection, [{ filename: "more.json", document: extra }], Date.now());
    const written = await checkpointed();
    // A record whose fields are not in the order the fold makes them is written whole.
    const odd = written.tasks.get("p3/acme/t7/ALL");
    if (!odd) throw new Error("no task t7");
    const { status, ...rest } = odd;
    written.tasks.set(odd.id, { ...rest, status });
    await saveSnapshot(dir, log, written);
    const { header, blocks } = layout(readFileSync(snapshotPath(), "utf8"));
    expect(header.specs).toBe(2);
    expect(header.blocks).toBe(1);
    const [block] = blocks as [Block];
    // The odd record alone is written whole, in `whole` at its place in the block, with -1 for
    // its declaration.
    const t7 = placeOf(blocks, "p3/acme/t7/ALL");
    expect(block.decl.filter((d) => d === -1)).toHaveLength(1);
    expect(block.decl[t7.i]).toBe(-1);
    expect(Object.keys(block.whole)).toEqual([String(t7.i)]);
    expect(block.whole[t7.i]).toEqual(written.toSnapshot().tasks.find((t) => t.id === odd.id));
    expect(Object.keys(block.whole[t7.i] as object)).toEqual(Object.keys(written.tasks.get(odd.id) ?? {}));
    // Its child names it by its id, not by a place: its key need not be what its id says.
    expect(placeOf(blocks, "p0/acme/t8/ALL").refs).toEqual(["p3/acme/t7/ALL"]);
    // The pause's reason, a field past the usual ones, is in the paused task's extras alone.
    const paused = placeOf(blocks, "p2/acme/t6/ALL");
    expect(block.status[paused.i]).toBe("paused");
    expect(block.extras).toEqual({ [paused.i]: { pausedReason: "held" } });
    // The second declaration is the table's second; its undeclared parent is named by its id.
    const other = placeOf(blocks, "q/acme/other/ALL");
    expect(block.decl[other.i]).toBe(1);
    expect(other.refs).toEqual(["nowhere/acme/missing/ALL"]);

    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.replayed).toBe(0);
    const restored = loaded.projection;
    expect(restored.toSnapshot()).toEqual(written.toSnapshot());
    // Field for field and in the same order, as the fold holds them.
    expect(JSON.stringify(restored.toSnapshot())).toBe(JSON.stringify(written.toSnapshot()));
    // Shared: a task's key with its children's parents, and one declaration between the tasks
    // declared alike.
    const t4 = restored.tasks.get("p0/acme/t4/ALL");
    const t5 = restored.tasks.get("p1/acme/t5/ALL");
    expect(t5?.parents[0]).toBe(t4?.key);
    expect(t5?.spec).toBe(t4?.spec);
    expect(t5?.spec.retry).toBe(t4?.spec.retry);
    expect([...restored.children.of("p0/acme/t4/ALL")]).toEqual(["p1/acme/t5/ALL"]);
    expect(restored.tasks.get("q/acme/other/ALL")?.parents).toEqual([
      { project: "nowhere", account: "acme", name: "missing", partition: "ALL" },
    ]);
  });

  it("restores the children of a parent of one child, of a few and of many, as the fold indexes them", async () => {
    // Every child written after its parent (named by its place): the index is built with one
    // look-up a parent. t0 has 24 children, past the few the index keeps in a list.
    const hub = {
      tasks: Array.from({ length: 24 }, (_, i) => ({
        project: `h${i % 3}`,
        account: "acme",
        name: `c${i}`,
        cron: "0 * * * *",
        startDate: "2026-11-30T00:00:00Z",
        operator: { type: "noop" },
        parents: ["p0/acme/t0", ...(i % 2 === 0 ? ["p1/acme/t1"] : [])],
      })),
    };
    const projection = new SchedulerProjection();
    await catchUp(log, projection);
    await declare(log, projection, [{ filename: "hub.json", document: hub }], Date.now());
    const written = await checkpointed();
    const { blocks } = layout(readFileSync(snapshotPath(), "utf8"));
    expect(placeOf(blocks, "h0/acme/c0/ALL").refs.every((r) => typeof r === "number")).toBe(true);
    const restored = (await loadProjection(log, dir)).projection;
    expect(restored.children.count("p0/acme/t0/ALL")).toBe(24);
    expect(restored.children.count("p1/acme/t1/ALL")).toBe(12);
    expect(restored.children.count("p3/acme/t3/ALL")).toBe(1);
    for (const id of written.tasks.keys()) {
      expect([...restored.children.of(id)], id).toEqual([...written.children.of(id)]);
      expect(restored.children.count(id), id).toBe(written.children.count(id));
    }
    // The index built this way changes as the fold's does.
    restored.children.add("p0/acme/t0/ALL", "h0/acme/c0/ALL");
    expect(restored.children.count("p0/acme/t0/ALL")).toBe(24);
    restored.children.delete("p1/acme/t1/ALL", "h0/acme/c0/ALL");
    expect([...restored.children.of("p1/acme/t1/ALL")]).not.toContain("h0/acme/c0/ALL");
    expect(restored.children.count("p1/acme/t1/ALL")).toBe(11);
  });

  it("is refused when cut short or when it holds more than its header counts, and the log is replayed", async () => {
    const written = await checkpointed();
    const text = readFileSync(snapshotPath(), "utf8");
    const { lines, first } = layout(text);

    // Cut before its one block of tasks: none of the tasks read.
    writeFileSync(snapshotPath(), `${lines.slice(0, first).join("\n")}\n`);
    const cut = await loadProjection(log, dir);
    expect(cut.discarded).toBe(`unreadable snapshot: the file ends after 0 of its ${TASKS} tasks`);
    expect(cut.snapshotPosition).toBe(-1n);
    expect(cut.replayed).toBe(Number(written.position) + 1);
    expect(cut.projection.toSnapshot()).toEqual(written.toSnapshot());

    // In blocks of 16, cut after the second block: the tasks of the whole blocks read.
    const small = layout(await writeInBlocks(written, 16));
    expect(small.header.blocks).toBe(3);
    const read = small.blocks.slice(0, 2).reduce((n, b) => n + b.id.length, 0);
    expect(read).toBe(32);
    writeFileSync(snapshotPath(), `${small.lines.slice(0, small.first + 2).join("\n")}\n`);
    const inBlocks = await loadProjection(log, dir);
    expect(inBlocks.discarded).toBe(`unreadable snapshot: the file ends after ${read} of its ${TASKS} tasks`);
    expect(inBlocks.snapshotPosition).toBe(-1n);
    expect(inBlocks.replayed).toBe(Number(written.position) + 1);
    expect(inBlocks.projection.toSnapshot()).toEqual(written.toSnapshot());

    // Torn inside a block's line.
    const blockEnd = small.lines.slice(0, small.first + 2).join("\n").length;
    writeFileSync(snapshotPath(), small.lines.join("\n").slice(0, blockEnd - 40));
    const tornBlock = await loadProjection(log, dir);
    expect(tornBlock.discarded).toMatch(/^unreadable snapshot: /);
    expect(tornBlock.snapshotPosition).toBe(-1n);
    expect(tornBlock.projection.toSnapshot()).toEqual(written.toSnapshot());

    writeFileSync(snapshotPath(), `${text}${lines[1]}\n`);
    const over = await loadProjection(log, dir);
    expect(over.discarded).toBe("unreadable snapshot: lines after the last record the header counts");
    expect(over.projection.toSnapshot()).toEqual(written.toSnapshot());

    writeFileSync(snapshotPath(), text.slice(0, text.length - 20));
    const torn = await loadProjection(log, dir);
    expect(torn.discarded).toMatch(/^unreadable snapshot: /);
    expect(torn.snapshotPosition).toBe(-1n);
    expect(torn.replayed).toBe(Number(written.position) + 1);
    expect(torn.projection.toSnapshot()).toEqual(written.toSnapshot());
  });

  it("of a projection of another shape is rebuilt from the log, its records not read", async () => {
    const written = await checkpointed();
    const text = readFileSync(snapshotPath(), "utf8");
    const header = JSON.parse(text.slice(0, text.indexOf("\n"))) as { format: number };
    const older = { ...header, format: SNAPSHOT_FORMAT - 1 };
    // Its records torn as well: a reader that went on past the header would say so instead.
    const body = text.slice(text.indexOf("\n") + 1);
    writeFileSync(snapshotPath(), `${JSON.stringify(older)}\n${body.slice(0, body.length / 2)}`);
    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBe(
      `unreadable snapshot: snapshot format ${SNAPSHOT_FORMAT - 1} is not ${SNAPSHOT_FORMAT}`,
    );
    expect(loaded.snapshotPosition).toBe(-1n);
    expect(loaded.replayed).toBe(Number(written.position) + 1);
    expect(loaded.projection.toSnapshot()).toEqual(written.toSnapshot());
  });

  it("in a layout this version no longer reads is rebuilt from the log, and says why", async () => {
    // Files as the versions before `lines/3` wrote them, made by hand: a line per record whole
    // (`lines`), a task per line after the tables (`lines/2`, its tasks whole, as it could hold
    // them), one JSON document; each of this snapshot format, which none of those versions
    // wrote, and all of them with a record torn (a reader that went on past the header would
    // say so instead).
    const written = await checkpointed();
    const [at] = await log.readAllStored({ fromPosition: written.position, maxCount: 1 });
    const headHash = at?.metadata.hash;
    const snapshot = written.toSnapshot();
    const { tasks, instances, connections, connectionRevisions, workflows, ...tail } = snapshot;
    const { workflowRevisions, runs, alerts, cacheKeys, ...head } = tail;
    const all = {
      tasks,
      instances,
      connections,
      connectionRevisions,
      workflows,
      workflowRevisions,
      runs,
      alerts,
      cacheKeys,
    };
    const counts = Object.fromEntries(Object.entries(all).map(([l, records]) => [l, records.length]));
    const records = Object.values(all).flatMap((list) => (list as unknown[]).map((r) => JSON.stringify(r)));
    const torn = (lines: string[]) => `${lines.join("\n").slice(0, -20)}`;
    const tables = { taskFields: Object.keys(tasks[0] ?? {}).slice(4), specs: 0, instants: 0 };
    const files: Array<[string, string, string]> = [
      [
        "a line per record (lines)",
        torn([JSON.stringify({ ...head, headHash, lines: "lines", counts }), ...records]),
        'snapshot layout "lines" is not lines/3, the only one this version reads',
      ],
      [
        "a task per line (lines/2)",
        torn([JSON.stringify({ ...head, headHash, lines: "lines/2", ...tables, counts }), ...records]),
        'snapshot layout "lines/2" is not lines/3, the only one this version reads',
      ],
      [
        "one JSON document",
        JSON.stringify({ snapshot, headHash }),
        "snapshot layout one JSON document is not lines/3, the only one this version reads",
      ],
      [
        "a layout of a later version",
        torn([JSON.stringify({ ...head, headHash, lines: "lines/4", counts }), ...records]),
        'snapshot layout "lines/4" is not lines/3, the only one this version reads',
      ],
      [
        "one JSON document of an older format, as those versions wrote it",
        JSON.stringify({ snapshot: { ...snapshot, format: SNAPSHOT_FORMAT - 1 }, headHash }),
        `snapshot format ${SNAPSHOT_FORMAT - 1} is not ${SNAPSHOT_FORMAT}`,
      ],
      [
        "a header that names no format",
        torn([JSON.stringify({ lines: "lines/3", counts }), ...records]),
        "the file names no snapshot format",
      ],
      ["a first line that is no header", torn(["[]", ...records]), "the file's first line is not a header"],
    ];
    expect(tables.taskFields[0]).toBe("status");
    for (const [what, text, why] of files) {
      writeFileSync(snapshotPath(), text);
      const loaded = await loadProjection(log, dir);
      expect(loaded.discarded, what).toBe(`unreadable snapshot: ${why}`);
      expect(loaded.snapshotPosition, what).toBe(-1n);
      expect(loaded.replayed, what).toBe(Number(written.position) + 1);
      expect(loaded.projection.toSnapshot(), what).toEqual(written.toSnapshot());
    }
  });

  it("is refused when a block of tasks or the header's tables are not what this version writes", async () => {
    const written = await checkpointed();
    const { lines, header, first, blocks } = layout(readFileSync(snapshotPath(), "utf8"));
    expect(header.blocks).toBe(1);
    const t5 = placeOf(blocks, "p1/acme/t5/ALL");
    const { i } = t5;
    /** The file with its block changed. */
    const block = (change: (b: Block) => void) => (l: string[]) => {
      const b = structuredClone(blocks[0]) as Block;
      change(b);
      l[first] = JSON.stringify(b);
    };
    const variants: Array<[string, RegExp, (l: string[]) => void]> = [
      ["a declaration's place past the table", /names declaration 7/, block((b) => (b.decl[i] = 7))],
      [
        "a column of one value that is not a plain value",
        /no column "status"/,
        (l) => {
          const raw = JSON.parse(l[first] as string);
          raw.status = { same: { status: "active" } };
          l[first] = JSON.stringify(raw);
        },
      ],
      [
        "an instant's place that is not a number",
        /names instant length/,
        block((b) => (b.logicalDate[i] = "length")),
      ],
      [
        "extras that are not an object",
        /past the usual ones are not an object/,
        block((b) => (b.extras[i] = "ab")),
      ],
      ["a column shorter than the ids", /no column "status"/, block((b) => b.status.pop())],
      [
        "a parent named by its own place",
        /not written before it/,
        block((b) => (b.parentRefs[t5.refAt] = t5.place)),
      ],
      [
        "a parent named by a later place",
        /not written before it/,
        block((b) => (b.parentRefs[t5.refAt] = TASKS - 1)),
      ],
      [
        "a parent that is not a task id",
        /"nope" is not a task id/,
        block((b) => (b.parentRefs[t5.refAt] = "nope")),
      ],
      [
        "more parents than the counts name",
        /more parents than its tasks name/,
        block((b) => b.parentRefs.push(0)),
      ],
      [
        "a status that is not a task status",
        /has the status sleeping/,
        block((b) => (b.status[i] = "sleeping")),
      ],
      [
        "a task count other than the blocks hold",
        /holds 40 tasks where its header counts 41/,
        (l) => (l[0] = JSON.stringify({ ...header, counts: { ...header.counts, tasks: TASKS + 1 } })),
      ],
      [
        "other fields",
        /are not the ones this version reads/,
        (l) => (l[0] = JSON.stringify({ ...header, taskFields: ["status"] })),
      ],
      ["a declaration that is not an object", /declaration 0 is not an object/, (l) => (l[1] = '"x"')],
    ];
    for (const [what, why, change] of variants) {
      const copy = [...lines];
      change(copy);
      writeFileSync(snapshotPath(), copy.join("\n"));
      const loaded = await loadProjection(log, dir);
      expect(loaded.discarded, what).toMatch(/^unreadable snapshot: /);
      expect(loaded.discarded, what).toMatch(why);
      expect(loaded.snapshotPosition, what).toBe(-1n);
      expect(loaded.projection.toSnapshot(), what).toEqual(written.toSnapshot());
    }
  });

  it.runIf(existsSync("/proc/self/fd"))("closes a file it refuses before its end", async () => {
    await checkpointed();
    const lines = readFileSync(snapshotPath(), "utf8").split("\n");
    // A bad record early on: the reader stops with most of the file unread.
    writeFileSync(snapshotPath(), [lines[0], "{not json", ...lines.slice(2)].join("\n"));
    const open = () => readdirSync("/proc/self/fd").length;
    const before = open();
    for (let i = 0; i < 20; i++) expect((await loadProjection(log, dir)).discarded).toMatch(/^unreadable/);
    // A stream closes its file a moment after it is destroyed: the last one may still be closing.
    await new Promise((r) => setTimeout(r, 100));
    expect(open()).toBeLessThanOrEqual(before + 1);
  });
});

describe("the projection's memory", () => {
  it("holds once what tasks declared alike hold alike, and a parent's key once", async () => {
    const folded = await checkpointed();
    const t = (n: number, p: number) => folded.tasks.get(`p${p}/acme/t${n}/ALL`);
    const [t0, t1, t4, t5] = [t(0, 0), t(1, 1), t(4, 0), t(5, 1)];
    expect(t5?.parents[0]).toBe(t4?.key);
    expect(t5?.spec).toBe(t4?.spec);
    expect(t5?.spec.retry).toBe(t4?.spec.retry);
    expect(t5?.spec.operator).toBe(t0?.spec.operator);
    expect(t5?.spec.config).toBe(t1?.spec.config);
    expect(t0?.parents).toBe(t1?.parents);
    // A task declared again with a policy of its own holds its own; the others keep theirs.
    const changed = {
      tasks: [
        {
          project: "p1",
          account: "acme",
          name: "t5",
          cron: "0 * * * *",
          startDate: "2026-11-30T00:00:00Z",
          operator: { type: "noop" },
          parents: ["p0/acme/t4"],
          retry: { maxAttempts: 4 },
        },
      ],
    };
    await declare(log, folded, [{ filename: "again.json", document: changed }], Date.now());
    await catchUp(log, folded);
    expect(t(5, 1)?.spec.retry.maxAttempts).toBe(4);
    expect(t(4, 0)?.spec.retry.maxAttempts).toBe(1);
    expect(t(5, 1)?.spec.retry).not.toBe(t(4, 0)?.spec.retry);
    expect(t(5, 1)?.spec).not.toBe(t(4, 0)?.spec);
    expect(t(5, 1)?.parents[0]).toBe(t(4, 0)?.key);
    // What the fold holds is the declared value, as a fold from the log's start gives it.
    const fresh = new SchedulerProjection();
    await catchUp(log, fresh);
    expect(JSON.stringify(fresh.toSnapshot())).toBe(JSON.stringify(folded.toSnapshot()));
  });
});

describe("the checkpoint's pieces and lines", () => {
  it("writes whole lines in pieces of the size asked, the same text as one piece", async () => {
    const written = await checkpointed();
    const body = { snapshot: written.toSnapshot(), headHash: "h" };
    const whole = snapshotPieces(body);
    expect(whole).toHaveLength(1);
    expect(snapshotPieces(body, 100).join("")).toBe(whole[0]);
    // In blocks of 4 tasks, each block's line longer than a piece: a piece at least per block.
    const [text] = snapshotPieces(body, 1 << 20, 4) as [string];
    const { lines, header } = layout(text);
    expect(header.blocks).toBe(TASKS / 4);
    const pieces = snapshotPieces(body, 100, 4);
    expect(pieces.length).toBeGreaterThanOrEqual(header.blocks);
    const ends: string[] = [];
    for (const [n, p] of pieces.entries()) {
      expect(p.endsWith("\n")).toBe(true);
      const held = p.slice(0, -1).split("\n");
      ends.push(...held);
      // A piece ends at the first whole line that brings it to the size asked.
      if (n === pieces.length - 1) continue;
      expect(p.length).toBeGreaterThanOrEqual(100);
      if (n > 0) expect(p.length - ((held.at(-1) as string).length + 1)).toBeLessThan(100);
    }
    expect(ends).toEqual(lines.slice(0, -1));
    expect(pieces.join("")).toBe(text);
  });

  it("reads lines across chunks: split characters, lines longer than a chunk, one long line", async () => {
    const path = join(dir, "lines.txt");
    const lines = [
      '{"a":"h\u00e9llo \u2603 \ud834\udd1e"}',
      "x".repeat(50),
      "",
      '"\ud834\udd1e\ud834\udd1e"',
      "end",
    ];
    writeFileSync(path, `${lines.join("\n")}\n`);
    for (const chunk of [1, 2, 3, 7, 64, 1 << 20]) {
      const read: string[] = [];
      for await (const line of linesOf(path, chunk)) read.push(line);
      expect(read, `chunks of ${chunk}`).toEqual(lines);
    }
    // An older snapshot: one document, no newline at its end, far longer than a chunk.
    const document = JSON.stringify({
      snapshot: { tasks: Array.from({ length: 200 }, (_, i) => `t\u00e9${i}`) },
    });
    writeFileSync(path, document);
    const read: string[] = [];
    for await (const line of linesOf(path, 16)) read.push(line);
    expect(read).toEqual([document]);
  });
});
