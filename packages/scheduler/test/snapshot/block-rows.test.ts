import type { SnapshotTask } from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { BlockRows, ParsedRows } from "../../src/snapshot/block-rows.js";
import { parseBlock } from "../../src/snapshot/column-reader.js";
import { ColumnWriter } from "../../src/snapshot/column-writer.js";
import { checkpointed, useSnapshotFixture } from "./fixture.js";

/*
 * A block of tasks read a row at a time (a read of a few tasks) gives each row as the block
 * parsed whole gives it; a block it does not read so (a task written whole, fields past the
 * usual ones, a value with an escape or an object) is left to the whole parse.
 */
useSnapshotFixture();

/** The lines of the tasks' blocks, as the checkpoint writes them. */
function linesOf(tasks: readonly SnapshotTask[], blockSize: number): string[] {
  const writer = new ColumnWriter(blockSize);
  for (const t of tasks) writer.add(t);
  writer.flush();
  return writer.lines;
}

describe("a block of tasks read by rows", () => {
  it("gives each task's row, key and id as the whole parse does", async () => {
    const { tasks } = (await checkpointed()).toSnapshot();
    // Blocks of 7 and of 100 (fewer values than a step, and steps of 64 values and a rest).
    const many = [
      ...tasks,
      ...tasks.map((t) => ({
        ...t,
        id: t.id.replace("/t", "/u"),
        key: { ...t.key, name: t.key.name.replace("t", "u") },
      })),
    ];
    for (const [list, size] of [
      [tasks, 7],
      [many, 100],
      [many, 4096],
    ] as const) {
      for (const line of linesOf(list, size)) {
        const rows = BlockRows.of(line);
        expect(rows).not.toBeNull();
        const whole = new ParsedRows(parseBlock(line));
        expect(rows?.n).toBe(whole.n);
        for (let i = 0; i < whole.n; i++) {
          expect(rows?.row(i)).toEqual(whole.row(i));
          expect(rows?.keyOf(i)).toEqual(whole.keyOf(i));
          expect(rows?.id(i)).toBe(whole.id(i));
        }
      }
    }
  });

  it("leaves a block of another kind to the whole parse", async () => {
    const { tasks } = (await checkpointed()).toSnapshot();
    const [first, ...rest] = tasks as [SnapshotTask, ...SnapshotTask[]];
    const { status, ...fields } = first;
    const kinds: SnapshotTask[][] = [
      // Written whole (its fields in another order).
      [{ ...fields, status } as SnapshotTask, ...rest],
      // A field past the usual ones.
      [{ ...first, marked: "x" } as SnapshotTask, ...rest],
      // An object in a column.
      [
        {
          ...first,
          failure: { logicalDate: first.logicalDate, state: "failed", reason: "no" },
        } as SnapshotTask,
        ...rest,
      ],
      // An id with a quote in it: escaped.
      [{ ...first, id: first.id.replace("t0", 't"0'), key: { ...first.key, name: 't"0' } }, ...rest],
    ];
    for (const list of kinds) {
      const [line] = linesOf(list, 4096) as [string];
      expect(BlockRows.of(line)).toBeNull();
      expect(() => parseBlock(line)).not.toThrow();
    }
    // A line cut short, or with a column shorter than its ids.
    const [line] = linesOf(tasks, 4096) as [string];
    expect(BlockRows.of(line.slice(0, -1))).toBeNull();
    expect(BlockRows.of(line.replace('"decl":{"same":0}', '"decl":[0]'))).toBeNull();
  });
});
