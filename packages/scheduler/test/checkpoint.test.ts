import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { instanceStream, SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, loadProjection, SNAPSHOT_FILE, saveSnapshot } from "@chronolog/scheduler";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { linesOf, snapshotPieces } from "../src/checkpoint.js";

/**
 * The checkpoint file: a header line, then a line of JSON per record, so that no snapshot has to
 * be one string (a million tasks' would be longer than the engine's longest). Each case writes a
 * real checkpoint of a real SQLite log and restores from it as `chronolog up` does.
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

describe("the checkpoint file", () => {
  it("is a header line and a line per record, and restores the projection it was written from", async () => {
    const written = await checkpointed();
    const lines = readFileSync(snapshotPath(), "utf8").split("\n");
    expect(lines.at(-1)).toBe(""); // every line ends
    const header = JSON.parse(lines[0] as string);
    expect(header.counts.tasks).toBe(TASKS);
    expect(header.counts.instances).toBe(1);
    expect(header.position).toBe(written.position.toString());
    const records = Object.values(header.counts as Record<string, number>).reduce((a, b) => a + b, 0);
    // The tasks are declared alike: their declaration's shared parts are written once.
    expect(header.specs).toBe(1);
    // And the instants they hold, a table of the few values.
    expect(header.instants).toBeGreaterThan(0);
    expect(header.instants).toBeLessThan(5);
    expect(lines.length).toBe(1 + header.specs + header.instants + records + 1);
    // A task is a short array naming that declaration, its parents by id, its instants by place.
    const task = JSON.parse(lines[1 + header.specs + header.instants + 5] as string);
    expect(task.slice(0, 3)).toEqual(["p1/acme/t5/ALL", 0, ["p0/acme/t4/ALL"]]);
    const instants = lines
      .slice(1 + header.specs, 1 + header.specs + header.instants)
      .map((l) => JSON.parse(l));
    const t5 = written.tasks.get("p1/acme/t5/ALL");
    expect(instants[task[4]]).toBe(t5?.logicalDate);
    expect(instants[task[6]]).toBe(t5?.nextRunDate);

    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.snapshotPosition).toBe(written.position);
    expect(loaded.replayed).toBe(0);
    expect(loaded.projection.toSnapshot()).toEqual(written.toSnapshot());
  });

  it("restores tasks that share a declaration's parts, and writes whole the records it cannot shorten", async () => {
    // A pause with a reason, a second declaration, a task whose parent is not declared.
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
    const lines = readFileSync(snapshotPath(), "utf8").split("\n");
    const header = JSON.parse(lines[0] as string);
    expect(header.specs).toBe(2);
    const first = 1 + header.specs + header.instants;
    const taskLines = lines.slice(first, first + header.counts.tasks);
    expect(taskLines.filter((l) => l.startsWith("{"))).toHaveLength(1);
    const paused = taskLines.map((l) => JSON.parse(l)).find((t) => t[0] === "p2/acme/t6/ALL");
    expect(paused.at(-1)).toEqual({ pausedReason: "held" });

    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.replayed).toBe(0);
    const restored = loaded.projection;
    expect(restored.toSnapshot()).toEqual(written.toSnapshot());
    // Field for field and in the same order, as the fold holds them.
    expect(JSON.stringify(restored.toSnapshot())).toBe(JSON.stringify(written.toSnapshot()));
    // Shared: a task's key with its declaration's and its children's parents, and the parts
    // of one declaration between the tasks declared alike.
    const t4 = restored.tasks.get("p0/acme/t4/ALL");
    const t5 = restored.tasks.get("p1/acme/t5/ALL");
    expect(t4?.spec.key).toBe(t4?.key);
    expect(t5?.spec.parents[0]).toBe(t4?.key);
    expect(t5?.spec.retry).toBe(t4?.spec.retry);
    expect(restored.children.get("p0/acme/t4/ALL")).toEqual(new Set(["p1/acme/t5/ALL"]));
    expect(restored.tasks.get("q/acme/other/ALL")?.spec.parents).toEqual([
      { project: "nowhere", account: "acme", name: "missing", partition: "ALL" },
    ]);
  });

  it("reads a checkpoint whose every record is whole, as the version before wrote it", async () => {
    const written = await checkpointed();
    const [at] = await log.readAllStored({ fromPosition: written.position, maxCount: 1 });
    const snapshot = written.toSnapshot();
    const lists = ["tasks", "instances", "connections", "connectionRevisions", "workflows"] as const;
    const more = ["workflowRevisions", "runs", "alerts", "cacheKeys"] as const;
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
    const counts = Object.fromEntries([...lists, ...more].map((l) => [l, all[l].length]));
    const text = [
      JSON.stringify({ ...head, headHash: at?.metadata.hash, lines: "lines", counts }),
      ...[...lists, ...more].flatMap((l) => (all[l] as unknown[]).map((r) => JSON.stringify(r))),
    ].join("\n");
    writeFileSync(snapshotPath(), `${text}\n`);
    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.replayed).toBe(0);
    expect(loaded.projection.toSnapshot()).toEqual(written.toSnapshot());
  });

  it("reads a snapshot written as one JSON document, as earlier versions wrote it", async () => {
    const written = await checkpointed();
    const [at] = await log.readAllStored({ fromPosition: written.position, maxCount: 1 });
    writeFileSync(
      snapshotPath(),
      JSON.stringify({ snapshot: written.toSnapshot(), headHash: at?.metadata.hash }),
    );
    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.replayed).toBe(0);
    expect(loaded.projection.toSnapshot()).toEqual(written.toSnapshot());
  });

  it("is refused when cut short or when it holds more than its header counts, and the log is replayed", async () => {
    const written = await checkpointed();
    const text = readFileSync(snapshotPath(), "utf8");
    const lines = text.split("\n");

    writeFileSync(snapshotPath(), `${lines.slice(0, 10).join("\n")}\n`);
    const cut = await loadProjection(log, dir);
    const header = JSON.parse(lines[0] as string);
    const kept = 10 - 1 - header.specs - header.instants;
    expect(cut.discarded).toBe(`unreadable snapshot: the file ends after ${kept} of its ${TASKS} tasks`);
    expect(cut.snapshotPosition).toBe(-1n);
    expect(cut.replayed).toBe(Number(written.position) + 1);
    expect(cut.projection.toSnapshot()).toEqual(written.toSnapshot());

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

  it("is refused when a task record or the header's tables are not what this version writes", async () => {
    const written = await checkpointed();
    const lines = readFileSync(snapshotPath(), "utf8").split("\n");
    const header = JSON.parse(lines[0] as string);
    const at = 1 + header.specs + header.instants;
    const record = JSON.parse(lines[at] as string);
    const variants: Array<[string, (l: string[]) => void]> = [
      [
        "a declaration's place past the table",
        (l) => (l[at] = JSON.stringify([record[0], 7, ...record.slice(2)])),
      ],
      [
        "an instant's place that is not a number",
        (l) => (l[at] = JSON.stringify([...record.slice(0, 4), "length", ...record.slice(5)])),
      ],
      ["extras that are not an object", (l) => (l[at] = JSON.stringify([...record, "ab"]))],
      ["a field too few", (l) => (l[at] = JSON.stringify(record.slice(0, -1)))],
      [
        "a parent that is not a task id",
        (l) => (l[at] = JSON.stringify([record[0], record[1], ["nope"], ...record.slice(3)])),
      ],
      ["other fields", (l) => (l[0] = JSON.stringify({ ...header, taskFields: ["status"] }))],
      ["a declaration that is not an object", (l) => (l[1] = '"x"')],
    ];
    for (const [what, change] of variants) {
      const copy = [...lines];
      change(copy);
      writeFileSync(snapshotPath(), copy.join("\n"));
      const loaded = await loadProjection(log, dir);
      expect(loaded.discarded, what).toMatch(/^unreadable snapshot: /);
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
    expect(t5?.spec.parents[0]).toBe(t4?.key);
    expect(t5?.spec.retry).toBe(t4?.spec.retry);
    expect(t5?.spec.operator).toBe(t0?.spec.operator);
    expect(t5?.spec.config).toBe(t1?.spec.config);
    expect(t0?.spec.parents).toBe(t1?.spec.parents);
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
    expect(t(5, 1)?.spec.parents[0]).toBe(t(4, 0)?.key);
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
    const pieces = snapshotPieces(body, 100);
    expect(pieces.length).toBeGreaterThan(TASKS / 2);
    for (const p of pieces) expect(p.endsWith("\n")).toBe(true);
    expect(pieces.join("")).toBe(whole[0]);
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
