import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { EventLog, GENESIS_HASH, UnsupportedLogLayoutError } from "@chronolog/log";
import { openSqliteLog, SqliteBackend } from "@chronolog/log-sqlite";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const appender = fileURLToPath(new URL("./fixtures/appender.mjs", import.meta.url));
const note = (text: string) => ({ type: "Note", data: { text } });

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-sqlite-"));
  path = join(dir, "log.db");
});
/** Children still running when a test ends (it failed, or timed out) are killed, not left looping. */
const children = new Set<ChildProcess>();
afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  children.clear();
  rmSync(dir, { recursive: true, force: true });
});

function runChild(args: string[]): { child: ChildProcess; acks: string[]; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [appender, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const acks: string[] = [];
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    acks.push(...lines);
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      if (code !== 0 && code !== null) process.stderr.write(stderr);
      resolve(code);
    }),
  );
  return { child, acks, exited };
}

describe("sqlite log file", () => {
  it("is durable by default: WAL with synchronous=FULL", async () => {
    const log = openSqliteLog({ path });
    await log.append("test-a", [note("x")], { expectedRevision: "any" });
    await log.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.close();
    const backend = new SqliteBackend({ path });
    // synchronous is per connection: read it through the backend's own connection.
    expect(
      Number((backend as unknown as { db: Database.Database }).db.pragma("synchronous", { simple: true })),
    ).toBe(2);
    await backend.close();
  });

  it("maps 256 MiB of the file and caches 64 MiB by default, less when asked", async () => {
    const pragmas = async (options: { cacheMiB?: number; mmapMiB?: number }) => {
      const backend = new SqliteBackend({ path, ...options });
      const db = (backend as unknown as { db: Database.Database }).db;
      const read = [
        Number(db.pragma("mmap_size", { simple: true })),
        Number(db.pragma("cache_size", { simple: true })),
      ];
      await backend.close();
      return read;
    };
    expect(await pragmas({})).toEqual([256 * 1024 * 1024, -64 * 1024]);
    expect(await pragmas({ cacheMiB: 8, mmapMiB: 0 })).toEqual([0, -8 * 1024]);
  });

  it("refuses UPDATE and DELETE on events at the engine level", async () => {
    const log = openSqliteLog({ path });
    await log.append("test-a", [note("x")], { expectedRevision: "any" });
    await log.close();
    const db = new Database(path);
    expect(() => db.prepare("UPDATE events SET data = '{}'").run()).toThrow(/append-only \(UPDATE refused\)/);
    expect(() => db.prepare("DELETE FROM events").run()).toThrow(/append-only \(DELETE refused\)/);
    expect(() => db.prepare("DELETE FROM streams").run()).toThrow(/append-only/);
    db.close();
  });

  it("groups concurrent appenders into few commits (group commit)", async () => {
    const backend = new SqliteBackend({ path });
    const log = new EventLog(backend);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        log.append(`test-g${i}`, [note(String(i))], { expectedRevision: "no_stream" }),
      ),
    );
    expect(backend.commits).toBeLessThanOrEqual(2);
    expect((await log.readAll({ maxCount: 1000 })).length).toBe(100);
    await log.close();
  });

  it("a conflicting append in a group commit fails alone; the others land", async () => {
    const log = openSqliteLog({ path });
    await log.append("test-c", [note("0")], { expectedRevision: "no_stream" });
    const results = await Promise.allSettled([
      log.append("test-c", [note("stale")], { expectedRevision: "no_stream" }),
      log.append("test-d", [note("fresh")], { expectedRevision: "no_stream" }),
      log.append("test-c", [note("1")], { expectedRevision: 0n }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    expect((await log.readStream("test-c")).map((e) => (e.data as { text: string }).text)).toEqual([
      "0",
      "1",
    ]);
    expect((await log.verify()).break).toBeNull();
    await log.close();
  });

  it("an append whose new stream is made and whose other write is refused leaves no stream behind", async () => {
    const log = openSqliteLog({ path });
    await log.append("test-old", [note("0")], { expectedRevision: "no_stream" });
    const streams = () => {
      const db = new Database(path, { readonly: true });
      const n = db.prepare("SELECT count(*) FROM streams").pluck().get();
      db.close();
      return n;
    };
    const before = streams();
    // In one group commit: two appends each making new streams, the first refused by its last
    // write (the old stream is not new), after its first two writes made their streams.
    const results = await Promise.allSettled([
      log.appendMany([
        { streamId: "test-new-a", events: [note("a")], expectedRevision: "no_stream" },
        { streamId: "test-new-b", events: [note("b")], expectedRevision: "no_stream" },
        { streamId: "test-old", events: [note("x")], expectedRevision: "no_stream" },
      ]),
      log.appendMany([
        { streamId: "test-new-c", events: [note("c")], expectedRevision: "no_stream" },
        { streamId: "test-old", events: [note("1")], expectedRevision: 0n },
      ]),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
    expect(streams()).toBe(before + 1);
    expect(await log.streamRevision("test-new-a")).toBe("no_stream");
    // The streams it did not make can be made later, by a write that says they are new.
    await log.appendMany([
      { streamId: "test-new-a", events: [note("a")], expectedRevision: "no_stream" },
      { streamId: "test-new-b", events: [note("b")], expectedRevision: "no_stream" },
    ]);
    expect(streams()).toBe(before + 3);
    expect((await log.readStream("test-new-a")).map((e) => e.data)).toEqual([{ text: "a" }]);
    expect((await log.readStream("test-old")).map((e) => e.data)).toEqual([{ text: "0" }, { text: "1" }]);
    expect((await log.verify()).break).toBeNull();
    await log.close();
  });

  it("a writer's remembered revisions yield to another connection's commits", async () => {
    const a = openSqliteLog({ path });
    const b = openSqliteLog({ path });
    await a.append("test-r", [note("a0")], { expectedRevision: "no_stream" });
    await b.append("test-r", [note("b1")], { expectedRevision: 0n });
    // a last wrote revision 0; b's commit must make a see revision 1, not its own memory.
    await expect(a.append("test-r", [note("stale")], { expectedRevision: 0n })).rejects.toMatchObject({
      actual: 1n,
    });
    await a.append("test-r", [note("a2")], { expectedRevision: 1n });
    expect((await b.readStream("test-r")).map((e) => (e.data as { text: string }).text)).toEqual([
      "a0",
      "b1",
      "a2",
    ]);
    expect((await b.verify()).break).toBeNull();
    await a.close();
    await b.close();
  });

  it("wakes its subscribers for its own commits once, and for another connection's as they come", async () => {
    const backend = new SqliteBackend({ path });
    let reads = 0;
    const readAll = backend.readAll.bind(backend);
    backend.readAll = (from, max) => {
      reads += 1;
      return readAll(from, max);
    };
    backend.readAllSeen = undefined;
    const log = new EventLog(backend);
    const seen: string[] = [];
    const sub = log.subscribe((e) => void seen.push((e.data as { text: string }).text), { pollMs: 5_000 });
    await sub.caughtUp;
    const before = reads;
    await log.append("test-w", [note("own")], { expectedRevision: "no_stream" });
    // The commit changes the WAL file, and the file watcher hears of it, for 50 ms: that must
    // not send the subscription back to the file each time.
    await new Promise((r) => setTimeout(r, 150));
    expect(seen).toEqual(["own"]);
    expect(reads - before).toBeLessThanOrEqual(2);
    const other = openSqliteLog({ path });
    await other.append("test-w", [note("other")], { expectedRevision: 0n });
    const start = Date.now();
    while (seen.length < 2 && Date.now() - start < 2_000) await new Promise((r) => setTimeout(r, 5));
    expect(seen).toEqual(["own", "other"]);
    await other.close();
    await sub.close();
    await log.close();
  });

  it("a read-only client reads beside the writer and cannot write", async () => {
    const log = openSqliteLog({ path });
    await log.append("test-a", [note("x")], { expectedRevision: "any" });
    const reader = openSqliteLog({ path, readonly: true });
    expect((await reader.readStream("test-a")).length).toBe(1);
    await expect(reader.append("test-a", [note("y")], { expectedRevision: "any" })).rejects.toThrow(
      /read-only/,
    );
    await log.append("test-a", [note("z")], { expectedRevision: "any" });
    expect((await reader.readStream("test-a")).length).toBe(2);
    await reader.close();
    await log.close();
  });

  it("two processes writing the same file are serialised safely: no lost or duplicated revision", async () => {
    openSqliteLog({ path }).close();
    const a = runChild([path, "test-shared", "5", "3", "150", "cas"]);
    const b = runChild([path, "test-shared", "5", "3", "150", "cas"]);
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    const log = openSqliteLog({ path, readonly: true });
    let total = 0;
    for (let s = 0; s < 5; s++) {
      const events = await log.readStream(`test-shared-s${s}`);
      expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => BigInt(i)));
      total += events.length;
    }
    expect(total).toBe(2 * 150 * 3);
    // Every acknowledged revision is distinct: no two appends were told they won the same slot.
    const acked = [...a.acks, ...b.acks].map((l) => l.split(" ").slice(0, 2).join(" "));
    expect(new Set(acked).size).toBe(acked.length);
    const verified = await log.verify();
    expect(verified.break).toBeNull();
    expect(verified.checked).toBe(900);
    await log.close();
  });

  it("a subscriber in this process sees another process's appends within milliseconds", async () => {
    openSqliteLog({ path }).close();
    const reader = openSqliteLog({ path, readonly: true });
    const seen: string[] = [];
    const sub = reader.subscribe((e) => void seen.push(e.streamId), { pollMs: 5_000 });
    await sub.caughtUp;
    const child = runChild([path, "test-xproc", "1", "1", "20"]);
    expect(await child.exited).toBe(0);
    const start = Date.now();
    while (seen.length < 20 && Date.now() - start < 4_000) await new Promise((r) => setTimeout(r, 5));
    await sub.close();
    await reader.close();
    // With a 5 s poll interval, 20 events in under 4 s can only come from file notifications.
    expect(seen.length).toBe(20);
  });

  it("a subscriber gets its own process's appends and another process's, each once, in order", async () => {
    const log = openSqliteLog({ path });
    const seen: bigint[] = [];
    const sub = log.subscribe((e) => void seen.push(e.position), { fromPosition: 0n, pollMs: 5_000 });
    await sub.caughtUp;
    const child = runChild([path, "test-other", "3", "1", "300"]);
    // This process appends all the while, a few appends at a time, as a scheduler does.
    let own = 0;
    while (child.child.exitCode === null && own < 3000) {
      await Promise.all(
        Array.from({ length: 5 }, () =>
          log.append(`test-own-${own++ % 7}`, [note("x")], { expectedRevision: "any" }),
        ),
      );
    }
    expect(await child.exited).toBe(0);
    const head = await log.headPosition();
    const start = Date.now();
    while (seen.length < Number(head) + 1 && Date.now() - start < 4_000)
      await new Promise((r) => setTimeout(r, 5));
    await sub.close();
    expect(seen).toEqual(Array.from({ length: Number(head) + 1 }, (_, i) => BigInt(i)));
    expect(head + 1n).toBe(BigInt(own + 300));
    expect((await log.verify()).break).toBeNull();
    await log.close();
  });

  it("survives SIGKILL of an appending process: no acknowledged append lost, no torn event", async () => {
    openSqliteLog({ path }).close();
    const run = runChild([path, "test-crash", "10", "7"]);
    const started = Date.now();
    while (run.acks.length < 300 && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 5));
    run.child.kill("SIGKILL");
    await run.exited;
    const acks = [...run.acks];
    expect(acks.length).toBeGreaterThanOrEqual(300);
    const log = openSqliteLog({ path });
    for (const line of acks) {
      const [stream, revision] = line.split(" ");
      const events = await log.readStream(stream as string, {
        fromRevision: BigInt(revision as string),
        maxCount: 1,
      });
      expect(events.length, line).toBe(1);
    }
    for (let s = 0; s < 10; s++) {
      const events = await log.readStream(`test-crash-s${s}`);
      // Each append wrote 7 events: a stream holds whole appends only.
      expect(events.length % 7).toBe(0);
      expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => BigInt(i)));
    }
    expect((await log.verify()).break).toBeNull();
    // The log is writable again after the crash.
    await log.append("test-crash-s0", [note("after")], { expectedRevision: "exists" });
    await log.close();
  });
});

describe("positions", () => {
  const meta = (file: string): string | undefined => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare("SELECT value FROM meta WHERE key = 'first_position'").pluck().get() as
        | string
        | undefined;
    } finally {
      db.close();
    }
  };

  it("a new file numbers its events from 0, like the other logs", async () => {
    const backend = new SqliteBackend({ path });
    const log = new EventLog(backend);
    expect(backend.firstPosition).toBe(0n);
    expect(await log.headPosition()).toBe(-1n);
    // The first event of an empty log is made only while its head is -1.
    await expect(
      log.appendMany([{ streamId: "test-p", expectedRevision: "no_stream", events: [note("x")] }], {
        expectedHead: 0n,
      }),
    ).rejects.toMatchObject({ expected: 0n, actual: -1n });
    const [first] = await log.appendMany(
      [{ streamId: "test-p", expectedRevision: "no_stream", events: [note("a")] }],
      { expectedHead: -1n },
    );
    expect(first?.position).toBe(0n);
    expect(await log.headPosition()).toBe(0n);
    // Its head is now 0: an append expecting -1 is refused, one expecting 0 is made at 1.
    await expect(
      log.appendMany([{ streamId: "test-p", expectedRevision: 0n, events: [note("late")] }], {
        expectedHead: -1n,
      }),
    ).rejects.toMatchObject({ expected: -1n, actual: 0n });
    const [second] = await log.appendMany(
      [{ streamId: "test-p", expectedRevision: 0n, events: [note("b")] }],
      { expectedHead: 0n },
    );
    expect(second?.position).toBe(1n);
    const all = await log.readAllStored({ fromPosition: 0n });
    expect(all.map((e) => e.position)).toEqual([0n, 1n]);
    expect(all[0]?.metadata.prevHash).toBe(GENESIS_HASH);
    expect(await log.verify()).toEqual({ checked: 2, headPosition: 1n, break: null });
    await log.close();
    expect(meta(path)).toBe("0");
    // Another connection, here a reader, finds the same numbering and the event at 0.
    const reader = openSqliteLog({ path, readonly: true });
    expect((await reader.readAll({ fromPosition: 0n, maxCount: 1 }))[0]?.position).toBe(0n);
    await reader.close();
  });

  it("a subscription from the start receives the event at position 0", async () => {
    const log = openSqliteLog({ path });
    const seen: bigint[] = [];
    const sub = log.subscribe((e) => void seen.push(e.position), { fromPosition: 0n });
    await sub.caughtUp;
    await log.append("test-s", [note("a"), note("b")], { expectedRevision: "no_stream" });
    const start = Date.now();
    while (seen.length < 2 && Date.now() - start < 2_000) await new Promise((r) => setTimeout(r, 5));
    expect(seen).toEqual([0n, 1n]);
    await sub.close();
    await log.close();
  });

  /**
   * A file as the embedded log wrote it when it numbered from 1 (in layout 1, the only one then):
   * events at 1, 2, 3 whose hashes cover those positions, and no `first_position` in meta.
   */
  async function legacyFile(): Promise<string[]> {
    openSqliteLog({ path, layout: 1 }).close();
    const db = new Database(path);
    db.prepare("UPDATE meta SET value = '1' WHERE key = 'first_position'").run();
    db.close();
    const log = openSqliteLog({ path });
    for (const text of ["a", "b", "c"])
      await log.append("test-old", [note(text)], { expectedRevision: "any" });
    const hashes = (await log.readAllStored({ fromPosition: 0n })).map((e) => e.metadata.hash);
    await log.close();
    const edit = new Database(path);
    edit.prepare("DELETE FROM meta WHERE key = 'first_position'").run();
    edit.close();
    expect(meta(path)).toBeUndefined();
    return hashes;
  }

  it("a file written when positions started at 1 keeps them, verifies, and appends at head+1", async () => {
    const hashes = await legacyFile();
    // A reader that opens it before any writer of this layout reads it as it is.
    const reader = new SqliteBackend({ path, readonly: true });
    expect(reader.firstPosition).toBe(1n);
    await reader.close();
    expect(meta(path)).toBeUndefined();

    const backend = new SqliteBackend({ path });
    const log = new EventLog(backend);
    expect(backend.firstPosition).toBe(1n);
    expect(meta(path)).toBe("1");
    const before = await log.readAllStored({ fromPosition: 0n });
    expect(before.map((e) => e.position)).toEqual([1n, 2n, 3n]);
    expect(before.map((e) => e.metadata.hash)).toEqual(hashes);
    expect(before[0]?.metadata.prevHash).toBe(GENESIS_HASH);
    expect(await log.verify()).toEqual({ checked: 3, headPosition: 3n, break: null });
    await expect(
      log.appendMany([{ streamId: "test-old", expectedRevision: 2n, events: [note("x")] }], {
        expectedHead: 2n,
      }),
    ).rejects.toMatchObject({ expected: 2n, actual: 3n });
    const [next] = await log.appendMany(
      [{ streamId: "test-old", expectedRevision: 2n, events: [note("d")] }],
      { expectedHead: 3n },
    );
    expect(next).toEqual({ nextExpectedRevision: 3n, position: 4n });
    expect(await log.verify()).toEqual({ checked: 4, headPosition: 4n, break: null });
    await log.close();

    // Opened again, it is still numbered from 1: the key is kept, not derived anew.
    const again = new SqliteBackend({ path });
    expect(again.firstPosition).toBe(1n);
    await again.close();
  });

  it("an empty file written before the key existed numbers from 0", async () => {
    openSqliteLog({ path }).close();
    const db = new Database(path);
    db.prepare("DELETE FROM meta WHERE key = 'first_position'").run();
    db.close();
    const log = openSqliteLog({ path });
    expect((await log.append("test-e", [note("a")], { expectedRevision: "no_stream" })).position).toBe(0n);
    await log.close();
    expect(meta(path)).toBe("0");
  });

  it("refuses a file whose first position is not a position, and leaves it as it was", async () => {
    openSqliteLog({ path }).close();
    const db = new Database(path);
    db.prepare("UPDATE meta SET value = 'one' WHERE key = 'first_position'").run();
    db.close();
    expect(() => new SqliteBackend({ path })).toThrow(UnsupportedLogLayoutError);
    expect(() => new SqliteBackend({ path })).toThrow(/first position "one" is not a position/);
    expect(meta(path)).toBe("one");
  });
});

describe("tamper evidence", () => {
  async function writeSome(): Promise<bigint[]> {
    const log = openSqliteLog({ path });
    const positions: bigint[] = [];
    for (let i = 0; i < 10; i++) {
      positions.push(
        (await log.append(`test-t${i % 3}`, [note(`n${i}`)], { expectedRevision: "any" })).position,
      );
    }
    expect((await log.verify()).break).toBeNull();
    await log.close();
    return positions;
  }

  function sqlite(sql: string): void {
    // The system's sqlite3 shell edits the file behind the library's back.
    execFileSync("sqlite3", [path, sql]);
  }

  it("reports the first position whose content was edited", async () => {
    const positions = await writeSome();
    const target = positions[4] as bigint;
    sqlite(
      `DROP TRIGGER events_no_update; UPDATE events SET data = '{"text":"forged"}' WHERE position = ${target};`,
    );
    const log = openSqliteLog({ path, readonly: true });
    const result = await log.verify();
    expect(result.break).toEqual({ position: target, reason: "the event's content does not match its hash" });
    expect(result.checked).toBe(4);
    await log.close();
  });

  it("reports a deleted event at the position after the gap", async () => {
    const positions = await writeSome();
    sqlite(`DROP TRIGGER events_no_delete; DELETE FROM events WHERE position = ${positions[6]};`);
    const log = openSqliteLog({ path, readonly: true });
    const result = await log.verify();
    expect(result.break?.position).toBe(positions[7]);
    expect(result.break?.reason).toMatch(/prev_hash/);
    await log.close();
  });

  it("reports a rewritten hash chain from the edited event on", async () => {
    const positions = await writeSome();
    sqlite(
      `DROP TRIGGER events_no_update; UPDATE events SET actor = 'mallory', hash = 'x' WHERE position = ${positions[2]};`,
    );
    const log = openSqliteLog({ path, readonly: true });
    expect((await log.verify()).break?.position).toBe(positions[2]);
    await log.close();
  });
});

describe("a write prepared whole, appended in slices", () => {
  it("checks every write first, and appends only what this log prepared, through its limits", async () => {
    const log = openSqliteLog({ path, actor: "test" });
    try {
      const write = (stream: string, text = "x") => ({
        streamId: stream,
        events: [note(text)],
        expectedRevision: "no_stream" as const,
      });
      // One write the log refuses: nothing of the others is appended.
      expect(() => log.prepare([write("note-a"), write("note-b", "y".repeat(70_000))])).toThrow(
        "note-b: events[0] (Note): data.text: ",
      );
      const prepared = log.prepare([write("note-a"), write("note-b")]);
      await log.appendPrepared(prepared.slice(0, 1));
      await log.appendPrepared(prepared.slice(1));
      expect((await log.readAll({ fromPosition: 0n })).map((e) => e.streamId)).toEqual(["note-a", "note-b"]);
      // A view's limits: its prepare refuses, and writes made by hand are not taken.
      const view = log.as("limited", (writes) => {
        if (writes.some((w) => w.streamId === "note-secret")) throw new Error("not yours");
      });
      expect(() => view.prepare([write("note-secret")])).toThrow("not yours");
      const forged = [
        { streamId: "note-secret", events: prepared[0]?.events ?? [], expected: "no_stream" as const },
      ];
      await expect(view.appendPrepared(forged)).rejects.toThrow("was not made by this log's prepare");
      await expect(view.appendPrepared(prepared)).rejects.toThrow("was not made by this log's prepare");
    } finally {
      await log.close();
    }
  });
});
