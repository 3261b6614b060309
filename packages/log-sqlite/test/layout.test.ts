import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EventLog, exportLine, UnsupportedLogLayoutError } from "@chronolog/log";
import { type LayoutVersion, openSqliteLog, SqliteBackend } from "@chronolog/log-sqlite";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeText, encodeText, packId, packInstant, unpackId, unpackInstant } from "../src/compact.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-layout-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const layoutOf = (file: string): string | undefined => {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT value FROM meta WHERE key = 'layout_version'").pluck().get() as
      | string
      | undefined;
  } finally {
    db.close();
  }
};

describe("the compact forms of layout 2", () => {
  const texts = [
    "",
    "{}",
    '{"text":"n1"}',
    '{"key":{"project":"p0","account":"acme","name":"t0","partition":"ALL"},"logicalDate":"2026-12-02T01:00:00.000Z","attempt":1,"token":"x"}',
    '{"attempt":1,"token":"abc","durationMs":0,"exitCode":null,"output":{"stdoutTail":"","stderrTail":""},"cacheHit":false,"workerId":"worker-1"}',
    "instance-p3/acme/t12/ALL@2026-12-02T02:00:00.000Z",
    'unicode: "caf\u00e9 \u2603 \ud83d\ude00" and an escaped \\u0001',
    '{"key":{"project":"',
    '","account":"","name":"',
    'a fragment at the end ,"nextRunDate":"',
    '\u2603{"key":{"project":"x',
  ];

  it("reads back every text exactly, coded or not", () => {
    for (const t of texts) {
      const coded = encodeText(t);
      expect(coded, JSON.stringify(t)).not.toBeNull();
      expect(decodeText(coded as string), JSON.stringify(t)).toBe(t);
    }
  });

  it("codes what the dictionary holds into one character each, behind a marker", () => {
    const json =
      '{"key":{"project":"p0","account":"acme","name":"t0","partition":"ALL"},"logicalDate":"2026-12-02T01:00:00.000Z"}';
    const coded = encodeText(json) as string;
    expect(coded.charCodeAt(0)).toBe(1);
    expect(coded.length).toBeLessThan(json.length / 2);
    // A text the dictionary has nothing of is kept as it is: it starts with no marker.
    expect(encodeText('{"text":"n1"}')).toBe('{"text":"n1"}');
  });

  it("refuses to code a text that holds a control character (it is stored as bytes)", () => {
    expect(encodeText("a\u0001b")).toBeNull();
    expect(encodeText("tab\tat the end\n")).toBeNull();
  });

  it("a coded text of a dictionary this version does not have is refused, naming the code", () => {
    expect(() => decodeText("\u0002abc")).toThrow(/code 2, which no dictionary of this version has/);
  });

  it("random texts round-trip", () => {
    const pieces = [
      '{"key":{"project":"',
      '","account":"',
      ":00:00.000Z",
      "/ALL@",
      "instance-",
      '"',
      ",",
      "é",
      "x",
      "1",
    ];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed;
    };
    for (let n = 0; n < 2000; n++) {
      let t = "";
      for (let k = next() % 12; k > 0; k--) t += pieces[next() % pieces.length];
      expect(decodeText(encodeText(t) as string)).toBe(t);
    }
  });

  it("codes each text as the plain longest-match rule does", () => {
    // The rule, plainly: from left to right, the longest dictionary entry that starts at each
    // place is replaced by its code. Files hold what it made: a faster encodeText must match it.
    const dictionary: string[] = [];
    for (let code = 1; code < 0x20; code++)
      dictionary.push(decodeText(`\u0001a${String.fromCharCode(code)}`).slice(1));
    const entries = Object.entries(dictionary).sort(([, a], [, b]) => b.length - a.length);
    const plain = (t: string): string | null => {
      if ([...t].some((c) => c.charCodeAt(0) < 0x20)) return null;
      let out = "";
      let coded = false;
      for (let i = 0; i < t.length; ) {
        const hit = entries.find(([, e]) => t.startsWith(e, i));
        if (hit) {
          out += String.fromCharCode(Number(hit[0]) + 1);
          i += hit[1].length;
          coded = true;
        } else out += t[i++];
      }
      return coded ? `\u0001${out}` : t;
    };
    let seed = 11;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed;
    };
    const pieces = [...dictionary, '"', ",", ":", "{", "/", "i", "é", "x", "\n"];
    for (const e of dictionary) pieces.push(e.slice(0, -1), e.slice(1), e.slice(0, 3));
    for (let n = 0; n < 5000; n++) {
      let t = "";
      for (let k = next() % 10; k > 0; k--) t += pieces[next() % pieces.length];
      expect(encodeText(t), JSON.stringify(t)).toBe(plain(t));
    }
    for (const t of texts) expect(encodeText(t)).toBe(plain(t));
  });

  it("ids and instants: the compact form when it reads back the same, else the text", () => {
    const uuid = "0b407ecf-5ebb-4202-92b0-87ba6308ef6b";
    expect(packId(uuid)).toHaveLength(16);
    expect(unpackId(packId(uuid))).toBe(uuid);
    expect((packId(uuid) as Buffer).toString("hex")).toBe(uuid.replaceAll("-", ""));
    // Packed into a buffer the caller reuses: each id's own bytes, whatever the buffer held.
    const into = Buffer.alloc(16, 0xff);
    for (const id of [uuid, "ffffffff-ffff-4fff-bfff-ffffffffffff", "00000000-0000-4000-8000-000000000000"]) {
      expect(packId(id, into)).toBe(into);
      expect(unpackId(into)).toBe(id);
    }
    for (const other of ["forged", "0B407ECF-5EBB-4202-92B0-87BA6308EF6B", "cause-1"]) {
      expect(packId(other)).toBe(other);
      expect(unpackId(packId(other))).toBe(other);
    }
    for (const iso of ["2026-12-02T04:33:13.194Z", "1970-01-01T00:00:00.000Z", "+275760-09-13T00:00:00.000Z"])
      expect(unpackInstant(packInstant(iso) as number)).toBe(iso);
    for (const odd of ["2026-12-02T04:33:13Z", "2026-12-02T05:33:13.194+01:00", "yesterday"])
      expect(packInstant(odd)).toBe(odd);
  });
});

describe("log files in each layout", () => {
  /** The same history written into `log`: every kind of field, odd values included. */
  async function history(log: EventLog): Promise<void> {
    await log.append(
      "task-p0/acme/t0/ALL",
      [
        {
          type: "TaskPaused",
          data: {
            key: { project: "p0", account: "acme", name: "t0", partition: "ALL" },
            reason: "caf\u00e9",
          },
          metadata: {
            eventId: "0b407ecf-5ebb-4202-92b0-87ba6308ef6b",
            causationId: "cause-1",
            correlationId: "0b407ecf-5ebb-4202-92b0-87ba6308ef6c",
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    for (let i = 0; i < 40; i++)
      await log.appendMany([
        {
          streamId: `instance-p${i % 3}/acme/t${i}/ALL@2026-12-02T02:00:00.000Z`,
          expectedRevision: "no_stream",
          events: [
            {
              type: "Note",
              data: { text: `control \u0001 and tab \t in ${i}` },
              metadata: { eventId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}` },
            },
          ],
        },
        {
          streamId: `note-${i}`,
          expectedRevision: "no_stream",
          events: [
            {
              type: "Note",
              data: { text: "x".repeat(i) },
              metadata: { actor: i % 2 ? "api:ci" : "cli:someone@host" },
            },
          ],
        },
      ]);
  }

  async function exportOf(file: string): Promise<string> {
    const log = openSqliteLog({ path: file, readonly: true, watchOtherProcesses: false });
    const lines = (await log.readAllStored({ fromPosition: 0n, maxCount: 10_000 })).map(exportLine);
    expect(await log.verify()).toMatchObject({ checked: lines.length, break: null });
    await log.close();
    return lines.join("");
  }

  function open(layout: LayoutVersion, name: string): EventLog {
    let t = Date.parse("2026-12-02T04:33:13.194Z");
    let id = 0;
    return openSqliteLog({
      path: join(dir, name),
      layout,
      actor: "scheduler:host:1",
      clock: () => {
        t += 1234;
        return new Date(t);
      },
      newId: () => `10000000-0000-4000-8000-${String(++id).padStart(12, "0")}`,
    });
  }

  it("a new file is made in layout 2; both layouts hold the same history to the byte, verified", async () => {
    const files: Record<LayoutVersion, string> = { 1: join(dir, "one.db"), 2: join(dir, "two.db") };
    for (const layout of [1, 2] as const) {
      const log = open(layout, layout === 1 ? "one.db" : "two.db");
      await history(log);
      await log.close();
    }
    expect(layoutOf(files[1])).toBe("1");
    expect(layoutOf(files[2])).toBe("2");
    const one = await exportOf(files[1]);
    expect(one.trimEnd().split("\n")).toHaveLength(81);
    expect(await exportOf(files[2])).toBe(one);
    const plain = openSqliteLog({ path: join(dir, "default.db") });
    await plain.close();
    expect(layoutOf(join(dir, "default.db"))).toBe("2");
  });

  it("layout 2 reads each stream back as written, and is the smaller file", async () => {
    for (const layout of [1, 2] as const) {
      const log = open(layout, `${layout}.db`);
      await history(log);
      for (let n = 0; n < 300; n++)
        await log.append(
          `instance-p1/acme/big${n}/ALL@2026-12-02T02:00:00.000Z`,
          [
            {
              type: "DispatchIntended",
              data: {
                key: { project: "p1", account: "acme", name: `big${n}`, partition: "ALL" },
                logicalDate: "2026-12-02T02:00:00.000Z",
                attempt: 1,
                token: `tok-${n}-abcdefgh`,
                operator: { type: "noop" },
                idempotent: true,
                leaseSeconds: 30,
              },
            },
          ],
          { expectedRevision: "no_stream" },
        );
      const stream = await log.readStream("instance-p1/acme/t4/ALL@2026-12-02T02:00:00.000Z");
      expect(stream.map((e) => [e.revision, e.data])).toEqual([
        [0n, { text: "control \u0001 and tab \t in 4" }],
      ]);
      const [taskEvent] = await log.readStream("task-p0/acme/t0/ALL");
      expect(taskEvent?.metadata).toMatchObject({
        eventId: "0b407ecf-5ebb-4202-92b0-87ba6308ef6b",
        causationId: "cause-1",
        correlationId: "0b407ecf-5ebb-4202-92b0-87ba6308ef6c",
        actor: "scheduler:host:1",
        recordedAt: "2026-12-02T04:33:14.428Z",
        prevHash: "",
      });
      expect(await log.streamRevision("instance-p1/acme/big7/ALL@2026-12-02T02:00:00.000Z")).toBe(0n);
      await log.close();
    }
    const size = (layout: number) =>
      statSync(join(dir, `${layout}.db`)).size +
      (statSync(join(dir, `${layout}.db-wal`), { throwIfNoEntry: false })?.size ?? 0);
    expect(size(2)).toBeLessThan(size(1) * 0.7);
  });

  it("a file keeps the layout it was made in when opened again, by a writer or a reader", async () => {
    const log = open(1, "old.db");
    await history(log);
    await log.close();
    const again = new SqliteBackend({ path: join(dir, "old.db") });
    expect(again.layout).toBe(1);
    await again.close();
    const reader = new SqliteBackend({ path: join(dir, "old.db"), readonly: true });
    expect(reader.layout).toBe(1);
    await reader.close();
    const appended = openSqliteLog({ path: join(dir, "old.db") });
    await appended.append("note-late", [{ type: "Note", data: { text: "late" } }], {
      expectedRevision: "no_stream",
    });
    expect(await appended.verify()).toMatchObject({ checked: 82, break: null });
    await appended.close();
    expect(layoutOf(join(dir, "old.db"))).toBe("1");
  });

  it("a layout this version does not know is refused, and the file left as it was", async () => {
    const file = join(dir, "future.db");
    openSqliteLog({ path: file }).close();
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = '3' WHERE key = 'layout_version'").run();
    db.close();
    expect(() => new SqliteBackend({ path: file })).toThrow(UnsupportedLogLayoutError);
    expect(() => new SqliteBackend({ path: file, readonly: true })).toThrow(
      /log layout version 3 is not supported/,
    );
    expect(layoutOf(file)).toBe("3");
  });
});
