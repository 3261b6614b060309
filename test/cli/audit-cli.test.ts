import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashStored, type StoredEvent } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const left = new Leftovers();
afterAll(() => left.clear());

/** A data directory whose log holds `n` notes (positions 0..n-1). */
async function logOf(n: number): Promise<string> {
  const dir = tempDataDir("audit");
  left.dirs.push(dir);
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  for (let i = 0; i < n; i += 10)
    await log.appendMany(
      Array.from({ length: Math.min(10, n - i) }, (_, j) => ({
        streamId: `note-${i + j}`,
        events: [{ type: "Note", data: { text: `n${i + j}` } }],
        expectedRevision: "no_stream" as const,
      })),
    );
  await log.close();
  return dir;
}

/** The file opened as a tamperer would: the triggers that keep it append-only dropped. */
function tamper(dir: string, fn: (db: Database.Database) => void): void {
  const db = new Database(join(dir, "log.db"));
  db.exec("DROP TRIGGER IF EXISTS events_no_update; DROP TRIGGER IF EXISTS events_no_delete;");
  db.transaction(() => fn(db))();
  db.close();
}

/**
 * Rewrites every hash from `from` on, as a tamperer who knows the hash function would: the
 * events read back as the log reads them, each hash recomputed from the one before.
 */
async function rechain(dir: string, from: number): Promise<void> {
  const log = openSqliteLog({ path: join(dir, "log.db"), readonly: true, watchOtherProcesses: false });
  const events = await log.readAllStored({ fromPosition: BigInt(from - 1), maxCount: 1_000_000 });
  await log.close();
  let prev = (events[0] as StoredEvent).metadata.hash;
  const hashes: Array<[bigint, string]> = [];
  for (const e of events.slice(1)) {
    const hash = hashStored(prev, { ...e, metadata: { ...e.metadata, prevHash: prev } });
    hashes.push([e.position, hash]);
    prev = hash;
  }
  tamper(dir, (db) => {
    const update = db.prepare("UPDATE events SET hash = ? WHERE position = ?");
    for (const [position, hash] of hashes) update.run(Buffer.from(hash, "hex"), position);
  });
}

function verifyJson(dir: string, args: string[] = []) {
  const r = chronolog(dir, ["log", "verify", "--json", ...args]);
  return { code: r.code, stderr: r.stderr, out: JSON.parse(r.stdout || "null") };
}

function anchorNow(dir: string, file: string): string {
  const r = chronolog(dir, ["log", "anchor", "--to", file]);
  expect(r.code, r.stderr).toBe(0);
  return readFileSync(file, "utf8").trim().split("\n").at(-1) as string;
}

describe("log verify --expect and --anchors", () => {
  it("prints the head's position and hash; anchor prints the same line or appends it to a file", async () => {
    const dir = await logOf(3);
    const v = chronolog(dir, ["log", "verify"]);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/^ok: 3 events verified, head at position 2, hash [0-9a-f]{64}\n$/);
    const hash = /hash ([0-9a-f]{64})/.exec(v.stdout)?.[1];
    expect(verifyJson(dir).out).toMatchObject({ checked: 3, headPosition: "2", headHash: hash, ok: true });
    const a = chronolog(dir, ["log", "anchor"]);
    expect(a.stdout).toMatch(
      new RegExp(`^2 ${hash} \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\\n$`),
    );
    const file = join(dir, "anchors");
    expect(anchorNow(dir, file)).toMatch(new RegExp(`^2 ${hash} `));
    const ok = chronolog(dir, ["log", "verify", "--anchors", file, "--expect", `1:${"0".repeat(64)}`]);
    expect(ok.code).toBe(5);
    expect(ok.stdout).toContain(`--expect: position 1: different hash: expected ${"0".repeat(64)}, found `);
    expect(ok.stdout).not.toContain("anchors line 1");
  });

  it("a log cut back by 50 events still has an intact chain, and the anchor catches it", async () => {
    const dir = await logOf(120);
    const anchors = join(dir, "anchors");
    const line = anchorNow(dir, anchors);
    const [, hash] = line.split(" ");
    tamper(dir, (db) => db.prepare("DELETE FROM events WHERE position >= 70").run());
    // The chain alone cannot tell: what is left of it is intact.
    const plain = chronolog(dir, ["log", "verify"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("ok: 70 events verified, head at position 69");
    const expect119 = chronolog(dir, ["log", "verify", "--expect", `119:${hash}`]);
    expect(expect119.code).toBe(5);
    expect(expect119.stdout).toContain("--expect: position 119: missing: the log ends at position 69");
    const byAnchor = verifyJson(dir, ["--anchors", anchors]);
    expect(byAnchor.code).toBe(5);
    expect(byAnchor.out.ok).toBe(false);
    expect(byAnchor.out.expectations).toEqual([
      {
        position: "119",
        hash,
        source: `${anchors} line 1`,
        ok: false,
        reason: "missing: the log ends at position 69",
      },
    ]);
  });

  it("an event altered by one byte is caught by the chain; with the chain rewritten, by the anchor", async () => {
    const dir = await logOf(60);
    const anchors = join(dir, "anchors");
    const [, hash] = anchorNow(dir, anchors).split(" ");
    tamper(dir, (db) => db.prepare(`UPDATE events SET data = '{"text":"n2X"}' WHERE position = 30`).run());
    const naive = verifyJson(dir);
    expect(naive.code).toBe(5);
    expect(naive.out.break).toEqual({
      position: "30",
      reason: "the event's content does not match its hash",
    });
    await rechain(dir, 30);
    expect(verifyJson(dir).code).toBe(0);
    const r = chronolog(dir, ["log", "verify", "--anchors", anchors]);
    expect(r.code).toBe(5);
    expect(r.stdout).toMatch(
      new RegExp(`${anchors} line 1: position 59: different hash: expected ${hash}, found [0-9a-f]{64}`),
    );
  });

  it("an event inserted (later positions shifted, the chain rewritten) is caught at the first anchor after it", async () => {
    const dir = await logOf(80);
    const anchors = join(dir, "anchors");
    writeFileSync(anchors, "");
    // An anchor from earlier, then one of the head.
    const earlier = chronolog(dir, ["log", "read", "--raw", "--json", "--from", "20", "-n", "1"]);
    const at20 = JSON.parse(earlier.stdout) as { metadata: { hash: string } };
    writeFileSync(anchors, `20 ${at20.metadata.hash} 2026-01-01T00:00:00.000Z\n\n`);
    const [, hash] = anchorNow(dir, anchors).split(" ");
    tamper(dir, (db) => {
      db.prepare("UPDATE events SET position = position + 1000000 WHERE position >= 40").run();
      db.prepare("UPDATE events SET position = position - 1000000 + 1 WHERE position >= 1000000").run();
      const sid = db.prepare("INSERT INTO streams(name) VALUES ('note-forged')").run().lastInsertRowid;
      db.prepare(
        `INSERT INTO events(position, sid, revision, type, version, data, event_id, actor, causation_id,
          correlation_id, recorded_at, hash)
         SELECT 40, ?, 0, type, version, '{"text":"forged"}', 'forged', actor, NULL, NULL, recorded_at, hash
         FROM events WHERE position = 39`,
      ).run(sid);
    });
    await rechain(dir, 40);
    const plain = chronolog(dir, ["log", "verify"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("ok: 81 events verified, head at position 80");
    const r = verifyJson(dir, ["--anchors", anchors]);
    expect(r.code).toBe(5);
    expect(r.out.expectations.map((x: { source: string; ok: boolean }) => [x.source, x.ok])).toEqual([
      [`${anchors} line 1`, true],
      [`${anchors} line 3`, false],
    ]);
    expect(r.out.expectations[1]).toMatchObject({
      position: "79",
      reason: expect.stringContaining(`expected ${hash}`),
    });
  });

  it("a malformed anchor line or --expect is bad input (exit 2), naming it", async () => {
    const dir = await logOf(2);
    const anchors = join(dir, "anchors");
    anchorNow(dir, anchors);
    writeFileSync(anchors, `${readFileSync(anchors, "utf8")}2 nothex 2026-01-01T00:00:00Z\n`);
    const r = chronolog(dir, ["log", "verify", "--anchors", anchors]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--anchors ${anchors} line 2: expected "POSITION HASH TIME"`);
    const x = chronolog(dir, ["log", "verify", "--expect", "2:abc"]);
    expect(x.code).toBe(2);
    expect(x.stderr).toContain('--expect "2:abc": expected POSITION:HASH');
  });
});

describe("log export and --file", () => {
  it("an export verifies offline; a one-byte change in it is caught at its position", async () => {
    const dir = await logOf(30);
    const anchors = join(dir, "anchors");
    anchorNow(dir, anchors);
    const exported = chronolog(dir, ["log", "export"]);
    expect(exported.code, exported.stderr).toBe(0);
    const text = exported.stdout;
    expect(text.split("\n")).toHaveLength(31);
    // A pure function of the stored events: the same bytes again.
    expect(chronolog(dir, ["log", "export"]).stdout).toBe(text);
    const file = join(dir, "export.jsonl");
    writeFileSync(file, text);
    // No live log here: another, empty data directory.
    const elsewhere = tempDataDir("auditor");
    left.dirs.push(elsewhere);
    const ok = chronolog(elsewhere, ["log", "verify", "--file", file, "--anchors", anchors]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(
      /^ok: 30 events verified, head at position 29, hash [0-9a-f]{64}\nok: 1 expected event held\n$/,
    );
    // One byte of the 17th event's data (at position 16).
    const lines = text.split("\n");
    const at = text.indexOf('n16\\"}');
    writeFileSync(file, `${text.slice(0, at)}m${text.slice(at + 1)}`);
    const changed = verifyJson(elsewhere, ["--file", file]);
    expect(changed.code).toBe(5);
    expect(changed.out.break).toEqual({
      line: 17,
      position: "16",
      reason: "the event's content does not match its hash",
    });
    // A line that does not parse.
    writeFileSync(file, [...lines.slice(0, 9), "{oops", ...lines.slice(10)].join("\n"));
    const broken = chronolog(elsewhere, ["log", "verify", "--file", file]);
    expect(broken.code).toBe(5);
    expect(broken.stdout).toContain("chain broken at line 10, position 9: not JSON");
    // Read commands refuse a damaged export, naming the line.
    const read = chronolog(elsewhere, ["log", "read", "--file", file]);
    expect(read.code).toBe(5);
    expect(read.stderr).toContain(`${file} line 10: not JSON`);
  });

  it("an export from a later position says where its chain starts; --to bounds it", async () => {
    const dir = await logOf(12);
    const part = chronolog(dir, ["log", "export", "--from", "5", "--to", "9"]).stdout;
    expect(
      part
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).position),
    ).toEqual(["5", "6", "7", "8", "9"]);
    const file = join(dir, "part.jsonl");
    writeFileSync(file, part);
    const v = chronolog(dir, ["log", "verify", "--file", file]);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(
      /^the export starts at position 5: its chain is checked from that event's prev_hash [0-9a-f]{64}, not from the log's start\n/,
    );
    const x = chronolog(dir, [
      "log",
      "verify",
      "--file",
      file,
      "--expect",
      `11:${"a".repeat(64)}`,
      "--expect",
      `2:${"a".repeat(64)}`,
    ]);
    expect(x.code).toBe(5);
    expect(x.stdout).toContain(
      "--expect: position 11: missing: the export's verified events end at position 9",
    );
    expect(x.stdout).toContain("--expect: position 2: missing: the export starts at position 5");
  });

  it("every read command works on an export, read-only", () => {
    const dir = tempDataDir("audit-tasks");
    left.dirs.push(dir);
    const start = new Date(Date.now() - 3 * 3_600_000).toISOString();
    const yaml = join(dir, "t.yaml");
    writeFileSync(
      yaml,
      `tasks:\n  - { project: p, account: a, name: t1, cron: "0 * * * *", startDate: "${start}", operator: { type: noop } }\n`,
    );
    expect(chronolog(dir, ["declare", yaml]).code).toBe(0);
    expect(chronolog(dir, ["pause", "p/a/t1/ALL", "--reason", "audit"]).code).toBe(0);
    const file = join(dir, "export.jsonl");
    writeFileSync(file, chronolog(dir, ["log", "export"]).stdout);
    const elsewhere = tempDataDir("auditor");
    left.dirs.push(elsewhere);
    const live = chronolog(dir, ["tasks", "--json"]);
    const fromFile = chronolog(elsewhere, ["tasks", "--file", file, "--json"]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toEqual(JSON.parse(live.stdout));
    for (const args of [
      ["task", "p/a/t1/ALL"],
      ["why", "p/a/t1/ALL"],
      ["history", "p/a/t1/ALL"],
      ["attempts", "p/a/t1/ALL"],
      ["runs"],
      ["log", "read"],
    ]) {
      const r = chronolog(elsewhere, ["--file", file, ...args]);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toBe(chronolog(dir, args).stdout);
    }
    const w = chronolog(elsewhere, ["--file", file, "resume", "p/a/t1/ALL"]);
    expect(w.code).toBe(1);
    expect(w.stderr).toContain(`log_read_only: the export ${file} is open read-only`);
    const missing = chronolog(elsewhere, ["--file", join(elsewhere, "nope.jsonl"), "tasks"]);
    expect(missing.code).toBe(2);
    // Eighteen runs of the CLI, each a process of its own: more than the default allows on a busy machine.
  }, 120_000);
});

describe("chronolog up --anchor-file", () => {
  it("appends an anchor every interval and one more at a clean stop; a failing path is logged, not fatal", async () => {
    const dir = await logOf(5);
    const anchors = join(dir, "anchors");
    const up = chronologSpawn(dir, [
      "up",
      "--workers",
      "1",
      "--warm-shells",
      "0",
      "--anchor-file",
      anchors,
      "--anchor-minutes",
      "0.005",
    ]);
    left.processes.push(up);
    let out = "";
    up.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
    });
    up.stderr?.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const lines = () => readFileSync(anchors, "utf8").trim().split("\n");
    await waitUntil("two anchors", () => {
      try {
        return lines().length >= 2 ? true : undefined;
      } catch {
        return undefined;
      }
    });
    const exited = new Promise<number | null>((r) => up.once("exit", r));
    up.kill("SIGTERM");
    expect(await exited).toBe(0);
    const before = lines().length;
    expect(before).toBeGreaterThanOrEqual(3);
    expect(out).toContain("anchored the log's head");
    const v = chronolog(dir, ["log", "verify", "--anchors", anchors]);
    expect(v.code, v.stdout).toBe(0);
    expect(v.stdout).toContain(`ok: ${before} expected events held`);

    const bad = join(dir, "no-such-dir", "anchors");
    const up2 = chronologSpawn(dir, [
      "up",
      "--workers",
      "1",
      "--warm-shells",
      "0",
      "--anchor-file",
      bad,
      "--anchor-minutes",
      "0.005",
    ]);
    left.processes.push(up2);
    let out2 = "";
    up2.stdout?.on("data", (c: Buffer) => {
      out2 += c.toString();
    });
    up2.stderr?.on("data", (c: Buffer) => {
      out2 += c.toString();
    });
    await waitUntil("an anchor failure logged twice", () =>
      out2.split("could not write an anchor").length > 2 ? true : undefined,
    );
    expect(up2.exitCode).toBeNull();
    const exited2 = new Promise<number | null>((r) => up2.once("exit", r));
    up2.kill("SIGTERM");
    expect(await exited2).toBe(0);

    const r = chronolog(dir, ["up", "--anchor-file", anchors, "--anchor-minutes", "0"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--anchor-minutes takes a number above 0");
  });
});
