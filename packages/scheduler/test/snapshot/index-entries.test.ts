import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ProjectionSnapshot, SchedulerProjection, type SnapshotTask } from "@chronolog/core";
import { catchUp, declare, snapshotPieces } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import { KeyIndexReader } from "../../src/snapshot/key-index.js";
import { checkpointed, dir, log, useSnapshotFixture } from "./fixture.js";

/*
 * The index a checkpoint ends with, made from what the column writer found: each id's place and
 * children as the tasks say, whatever order they come in, whichever are written whole and
 * whichever parents were never declared. Checked against the entries worked out from the tasks
 * alone.
 */
useSnapshotFixture();

type Entry = [string, number, (number[] | 0)?, (number[] | 0)?, string[]?];

/** The entries of the file's index, in the order of its lines. */
function entriesOf(snapshot: ProjectionSnapshot, blockSize: number): Entry[] {
  const text = snapshotPieces({ snapshot, headHash: "h" }, 1 << 20, blockSize).join("");
  const lines = text.split("\n");
  const mark = lines.indexOf('"index"');
  // The lines of entries, then the trailer and its offset.
  return lines.slice(mark + 1, -3).flatMap((l) => JSON.parse(l) as Entry[]);
}

/** The entries as the tasks alone say them. */
function expectedEntries(snapshot: ProjectionSnapshot): Entry[] {
  const place = new Map<string, number>();
  for (const [i, t] of snapshot.tasks.entries()) place.set(t.id, i);
  const children = new Map<string, number[]>();
  snapshot.tasks.forEach((t, i) => {
    for (const p of t.parents) {
      const id = `${p.project}/${p.account}/${p.name}/${p.partition}`;
      const list = children.get(id) ?? [];
      if (list.at(-1) !== i) list.push(i);
      children.set(id, list);
    }
  });
  const durations = new Map(snapshot.durations);
  const ids = new Set([...place.keys(), ...children.keys(), ...durations.keys()]);
  return [...ids].sort().map((id) => {
    const entry: Entry = [id, place.get(id) ?? -1];
    const c = children.get(id);
    const d = durations.get(id);
    if (c || d) entry.push(c ?? 0);
    if (d) entry.push([...d]);
    return entry;
  });
}

describe("the checkpoint's index", () => {
  it("names each id's place and children whatever the tasks' order and form", async () => {
    const projection = new SchedulerProjection();
    await catchUp(log, projection);
    await declare(
      log,
      projection,
      [
        {
          filename: "more.json",
          document: {
            tasks: [
              {
                project: "q",
                account: "acme",
                name: "other",
                cron: "*/5 * * * *",
                startDate: "2026-11-30T00:00:00Z",
                operator: { type: "noop" },
                parents: ["nowhere/acme/missing", "p1/acme/t5", "p2/acme/t6"],
              },
            ],
          },
        },
      ],
      Date.now(),
    );
    const snapshot = (await checkpointed()).toSnapshot();
    // Children before their parents: the tasks in reverse.
    const tasks = [...snapshot.tasks].reverse() as SnapshotTask[];
    // One written whole (its fields in another order), a parent of others.
    const at = tasks.findIndex((t) => t.id === "p1/acme/t5/ALL");
    const { status, ...rest } = tasks[at] as SnapshotTask;
    tasks[at] = { ...rest, status } as SnapshotTask;
    const shaken: ProjectionSnapshot = {
      ...snapshot,
      tasks,
      durations: [
        ["p2/acme/t6/ALL", [1000, 2000]],
        ["gone/acme/old/ALL", [5]],
      ],
    };
    for (const s of [snapshot, shaken])
      for (const blockSize of [4096, 7]) {
        const entries = entriesOf(s, blockSize);
        expect(entries).toEqual(expectedEntries(s));
      }
    // The tasks in reverse: each parent's children come before it, and are named.
    const byId = new Map(entriesOf(shaken, 7).map((e) => [e[0], e]));
    expect(byId.get("p1/acme/t5/ALL")?.[2]).toEqual(
      expect.arrayContaining([tasks.findIndex((t) => t.id === "q/acme/other/ALL")]),
    );
    expect(byId.get("nowhere/acme/missing/ALL")?.[1]).toBe(-1);
  });

  it("finds an entry in its line's text, not a list of cache keys that starts alike", async () => {
    const snapshot = (await checkpointed()).toSnapshot();
    const ids = snapshot.tasks.map((t) => t.id).sort();
    const [first, second] = ids as [string, string];
    // The first id's cache keys name the second id, after its durations: `],["<second>",`, as
    // an entry of the second would start, comes before the second's own entry in the line.
    const tricky: ProjectionSnapshot = {
      ...snapshot,
      durations: [[first, [1000, 2000]]],
      cacheKeys: [
        [first, [second, "k"]],
        ["zz/acme/none/ALL", ["zz/acme/only-a-key/ALL", "k"]],
      ],
    };
    const path = join(dir, "indexed.json");
    writeFileSync(path, snapshotPieces({ snapshot: tricky, headHash: "h" }, 1 << 20, 7).join(""));
    const index = KeyIndexReader.open(path);
    try {
      const expected = new Map(entriesOf(tricky, 7).map((e) => [e[0], e]));
      expect(index.entry(first)).toMatchObject({
        id: first,
        durations: [1000, 2000],
        cacheKeys: [second, "k"],
      });
      expect(index.entry(second)).toMatchObject({
        id: second,
        place: expected.get(second)?.[1],
        cacheKeys: null,
      });
      expect(index.entry("zz/acme/only-a-key/ALL")).toBeNull();
      expect(index.entry("zz/acme/none/ALL")).toMatchObject({
        place: -1,
        cacheKeys: ["zz/acme/only-a-key/ALL", "k"],
      });
      for (const id of ids) expect(index.entry(id)?.place, id).toBe(expected.get(id)?.[1]);
    } finally {
      index.close();
    }
  });
});
