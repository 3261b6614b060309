import { execFileSync, spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI, chronolog, chronologSpawn, cliEnv, tempDataDir } from "../support/cli.js";

let dir: string;
beforeEach(() => {
  dir = tempDataDir("log-cli");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("chronolog log", () => {
  it("appends, reads and verifies from the command line", () => {
    const a = chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"hello"}', "--json"]);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toEqual({ stream: "note-ops", revision: "0", position: "0" });
    const b = chronolog(dir, [
      "log",
      "append",
      "note-ops",
      "-t",
      "Note",
      "-d",
      '{"text":"again"}',
      "-e",
      "0",
    ]);
    expect(b.stdout).toContain("revision 1, position 1");
    const read = chronolog(dir, ["log", "read", "--json"]);
    const events = read.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events.map((e) => e.data.text)).toEqual(["hello", "again"]);
    expect(events[0].metadata.actor).toMatch(/^cli:/);
    const one = chronolog(dir, ["log", "read", "note-ops", "--from", "1"]);
    expect(one.stdout).toContain("again");
    expect(one.stdout).not.toContain("hello");
    const v = chronolog(dir, ["log", "verify"]);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain("ok: 2 events verified");
  });

  it("a stale expected revision is a conflict (exit 3) and writes nothing", () => {
    chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"1"}']);
    chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"2"}']);
    const r = chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"3"}', "-e", "0"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("expected revision 0, actual 1");
    expect(chronolog(dir, ["log", "read"]).stdout.trim().split("\n")).toHaveLength(2);
  });

  it("bad input gets a specific error (exit 2) and changes nothing", () => {
    chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"keep"}']);
    const cases: Array<[string[], RegExp]> = [
      [
        ["log", "append", "Bad Stream", "-t", "Note", "-d", '{"text":"x"}'],
        /invalid stream name "Bad Stream"/,
      ],
      [["log", "append", "note-ops", "-t", "Nope", "-d", "{}"], /unknown event type "Nope"/],
      [["log", "append", "note-ops", "-t", "TaskPaused", "-d", '{"key":{}}'], /data\.key\.project/],
      [["log", "append", "note-ops", "-t", "Note", "-d", "{not json"], /--data is not valid JSON/],
      [["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"x"}', "-e", "-1"], /--expected-revision/],
      [["log", "read", "--from", "abc"], /--from: "abc" is not a non-negative integer/],
    ];
    for (const [args, message] of cases) {
      const r = chronolog(dir, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    expect(chronolog(dir, ["log", "read"]).stdout.trim().split("\n")).toHaveLength(1);
  });

  it("reading a data directory with no log says so", () => {
    const r = chronolog(join(dir, "nothing-here"), ["log", "read"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no log at .*log\.db/);
  });

  it("verify reports the first broken position after the file is edited behind its back (exit 5)", () => {
    for (let i = 0; i < 5; i++)
      chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", `{"text":"n${i}"}`]);
    execFileSync("sqlite3", [
      join(dir, "log.db"),
      `DROP TRIGGER events_no_update; UPDATE events SET data = '{"text":"forged"}' WHERE position = 3;`,
    ]);
    const v = chronolog(dir, ["log", "verify", "--json"]);
    expect(v.code).toBe(5);
    expect(JSON.parse(v.stdout).break).toEqual({
      position: "3",
      reason: "the event's content does not match its hash",
    });
  });

  it("tail follows appends made by another process", async () => {
    chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"before"}']);
    const tail = chronologSpawn(dir, ["log", "tail", "--json"]);
    let out = "";
    tail.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
    });
    await new Promise((r) => setTimeout(r, 700));
    chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"live"}']);
    const start = Date.now();
    while (!out.includes("live") && Date.now() - start < 5000) await new Promise((r) => setTimeout(r, 10));
    tail.kill("SIGTERM");
    expect(out).toContain('"live"');
    expect(out).not.toContain('"before"');
  });
});

describe("the actor of a command's events", () => {
  it("names the account the command runs as, whatever $USER says", () => {
    const dir = tempDataDir("actor");
    try {
      const file = join(dir, "t.yaml");
      writeFileSync(
        file,
        'tasks:\n  - { project: p, account: a, name: t, cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", operator: { type: noop } }\n',
      );
      const r = spawnSync(process.execPath, [CLI, "--data-dir", dir, "declare", file], {
        encoding: "utf8",
        env: cliEnv({ USER: "mallory", CHRONOLOG_HOST: "build-7" }),
      });
      expect(r.status, r.stderr).toBe(0);
      const actors = chronolog(dir, ["log", "read", "--json"])
        .stdout.split("\n")
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { metadata: { actor: string } }).metadata.actor);
      expect(actors.length).toBeGreaterThan(0);
      for (const actor of actors)
        expect(actor).toMatch(new RegExp(`^cli:${userInfo().username}@build-7:\\d+$`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
