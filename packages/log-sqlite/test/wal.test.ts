import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { EventLog } from "@chronolog/log";
import { SqliteBackend } from "@chronolog/log-sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * The WAL stays bounded while the writer lives, even with a reader in another process that
 * keeps reading (and so keeps SQLite's passive checkpoints from finishing).
 */
const reader = fileURLToPath(new URL("./fixtures/reader.mjs", import.meta.url));
const MiB = 1024 * 1024;

let dir: string;
let path: string;
let child: ChildProcess | null = null;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-wal-"));
  path = join(dir, "log.db");
});
afterEach(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  child = null;
  rmSync(dir, { recursive: true, force: true });
});

const walSize = () => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

describe("the SQLite WAL", () => {
  it("stays under a bound through many appends while another process keeps reading", async () => {
    const backend = new SqliteBackend({ path, walLimitBytes: 2 * MiB });
    const log = new EventLog(backend, { actor: "test:wal" });
    await log.append("s-0", [{ type: "Note", data: { text: "first" } }], { expectedRevision: "any" });
    child = spawn(process.execPath, [reader, path, "20", "5"], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      child?.stdout?.on("data", (c: Buffer) => {
        if (c.toString().includes("reading")) resolve();
      });
      child?.once("exit", (code) => reject(new Error(`reader exited with ${code}`)));
    });
    const text = "x".repeat(1000);
    let largest = 0;
    let appended = 0;
    // About 60 MiB of events, in appends of 100 events to 50 streams.
    for (let i = 0; i < 600; i++) {
      const events = Array.from({ length: 100 }, (_, j) => ({
        type: "Note",
        data: { text: `${i}:${j}:${text}` },
      }));
      await log.append(`s-${i % 50}`, events, { expectedRevision: "any" });
      appended += events.length;
      largest = Math.max(largest, walSize());
    }
    // Once the appends stop, the next look truncates it.
    await new Promise((r) => setTimeout(r, 1500));
    const afterIdle = walSize();
    const dbSize = statSync(path).size;
    await log.close();
    expect(appended).toBe(60_000);
    // Between two checkpoints the WAL grows by what is appended meanwhile (looks are 200 ms
    // apart, and a reader in the way makes one give up): a bound well below what was appended.
    expect(largest).toBeLessThan(32 * MiB);
    expect(afterIdle).toBeLessThanOrEqual(2 * MiB);
    // What was appended is in the database file itself.
    expect(dbSize).toBeGreaterThan(50 * MiB);
    expect(backend.walCheckpoints.done).toBeGreaterThan(0);
  }, 120_000);

  it("is copied into the database by the helper thread and starts again, while appends go on", async () => {
    const limit = 4 * MiB;
    const backend = new SqliteBackend({ path, walLimitBytes: limit });
    const log = new EventLog(backend, { actor: "test:wal" });
    const text = "y".repeat(500);
    let largest = 0;
    // About 60 MiB of WAL frames (each commit writes a few 8 KiB pages), in small appends a
    // couple of milliseconds apart, as a busy scheduler's commits come: the helper copies while
    // they go on.
    for (let i = 0; i < 1500; i++) {
      const events = Array.from({ length: 5 }, (_, j) => ({
        type: "Note",
        data: { text: `${i}:${j}:${text}` },
      }));
      await log.append(`s-${i % 400}`, events, { expectedRevision: "any" });
      largest = Math.max(largest, walSize());
      await new Promise((r) => setTimeout(r, 2));
    }
    const during = { ...backend.walCheckpoints };
    await log.close();
    // The WAL started again from its beginning each time the helper's copy was finished, and
    // never reached the size at which the writer truncates it on its own thread.
    expect(during.done).toBeGreaterThanOrEqual(3);
    expect(during.truncated).toBe(0);
    expect(largest).toBeLessThan(4 * limit);
    // The helper's connection closed before the writer's: the last one out removed the WAL.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const again = new EventLog(new SqliteBackend({ path }), { actor: "test:wal" });
    const read = (await again.readAll({ maxCount: 20_000 })).length;
    await again.close();
    expect(read).toBe(7_500);
  }, 120_000);
});
