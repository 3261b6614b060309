import { readFileSync } from "node:fs";
import { SchedulerProjection } from "@chronolog/core";
import { catchUp, declare, loadProjection, saveSnapshot } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import {
  type Block,
  COLUMNS,
  checkpointed,
  dir,
  layout,
  log,
  pauseT6,
  placeOf,
  snapshotPath,
  TASKS,
  useSnapshotFixture,
  writeInBlocks,
} from "./fixture.js";

/**
 * The checkpoint file (`lines/4`): a header line, the table of the declarations' shared parts
 * and the table of instants (a line each), the tasks in blocks of columns (a line per block of
 * up to 4096 tasks), then a line of JSON per other record, then the index of the tasks by key
 * (its mark, its lines of entries, its trailer and the trailer's offset), so that no snapshot has to be one
 * string (a million tasks' would be longer than the engine's longest). Each case writes a real
 * checkpoint of a real SQLite log and restores from it as `chronolog up` does.
 */
useSnapshotFixture();

describe("the checkpoint file", () => {
  it("is a header line, the tables of declarations and instants, the tasks in blocks of columns and a line per other record, and restores the projection it was written from", async () => {
    const written = await checkpointed();
    const { lines, header, first, blocks, instants } = layout(readFileSync(snapshotPath(), "utf8"));
    expect(lines.at(-1)).toBe(""); // every line ends
    expect(header.lines).toBe("lines/4");
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
    // Then the index: its mark, one line of entries (40 ids), the trailer and its offset.
    expect(lines.length).toBe(first + header.blocks + (records - TASKS) + 4 + 1);
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
    expect(small.header.lines).toBe("lines/4");
    expect(small.header.blocks).toBe(3);
    expect(small.blocks.map((b) => b.id.length)).toEqual([16, 16, 8]);
    for (const b of small.blocks) for (const c of COLUMNS) expect(b[c], c).toHaveLength(b.id.length);
    expect(small.lines.length).toBe(small.first + 3 + (records - TASKS) + 4 + 1);
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
