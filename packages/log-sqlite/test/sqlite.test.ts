import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { EventLog } from "@chronolog/log";
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
