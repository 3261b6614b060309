import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { SNAPSHOT_FORMAT } from "@chronolog/core";
import { loadProjection } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import {
  type Block,
  checkpointed,
  dir,
  layout,
  log,
  placeOf,
  snapshotPath,
  TASKS,
  useSnapshotFixture,
  writeInBlocks,
} from "./fixture.js";

/**
 * A checkpoint that cannot be used as it is (cut short, of another snapshot format or layout, a
 * record this version does not write) is not used: the projection is rebuilt from the log, and
 * `discarded` says why in one line.
 */
useSnapshotFixture();

describe("the checkpoint file", () => {
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

    // A record more than the header counts, where the index should start.
    const mark = lines.indexOf('"index"');
    writeFileSync(
      snapshotPath(),
      `${[...lines.slice(0, mark), lines[mark - 1], ...lines.slice(mark)].join("\n")}`,
    );
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
    const { workflowRevisions, runs, alerts, cacheKeys, durations, ...head } = tail;
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
      durations,
    };
    const counts = Object.fromEntries(Object.entries(all).map(([l, records]) => [l, records.length]));
    const records = Object.values(all).flatMap((list) => (list as unknown[]).map((r) => JSON.stringify(r)));
    const torn = (lines: string[]) => `${lines.join("\n").slice(0, -20)}`;
    const tables = { taskFields: Object.keys(tasks[0] ?? {}).slice(4), specs: 0, instants: 0 };
    const files: Array<[string, string, string]> = [
      [
        "a line per record (lines)",
        torn([JSON.stringify({ ...head, headHash, lines: "lines", counts }), ...records]),
        'snapshot layout "lines" is not lines/4 or lines/3, the ones this version reads',
      ],
      [
        "a task per line (lines/2)",
        torn([JSON.stringify({ ...head, headHash, lines: "lines/2", ...tables, counts }), ...records]),
        'snapshot layout "lines/2" is not lines/4 or lines/3, the ones this version reads',
      ],
      [
        "one JSON document",
        JSON.stringify({ snapshot, headHash }),
        "snapshot layout one JSON document is not lines/4 or lines/3, the ones this version reads",
      ],
      [
        "a layout of a later version",
        torn([JSON.stringify({ ...head, headHash, lines: "lines/5", counts }), ...records]),
        'snapshot layout "lines/5" is not lines/4 or lines/3, the ones this version reads',
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
