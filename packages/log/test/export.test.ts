import { describe, expect, it } from "vitest";
import {
  EventLog,
  ExportBackend,
  ExportLineError,
  exportLine,
  GENESIS_HASH,
  LogReadOnlyError,
  parseExport,
  parseExportLine,
  type StoredEvent,
  storePrepared,
  verifyExportText,
} from "../src/index.js";

/** A chain of `n` stored events over two streams, from position `first` (the log's start: 0). */
function chain(n: number, first = 0n): StoredEvent[] {
  const out: StoredEvent[] = [];
  let prev = GENESIS_HASH;
  const revisions = new Map<string, bigint>();
  for (let i = 0; i < n; i++) {
    const streamId = i % 3 === 0 ? "note-b" : "note-a";
    const revision = (revisions.get(streamId) ?? -1n) + 1n;
    revisions.set(streamId, revision);
    const e = storePrepared(
      prev,
      {
        type: "Note",
        dataJson: JSON.stringify({ text: `n${i} é \u2028 "q"` }),
        schemaVersion: 1,
        eventId: `id-${i}`,
        actor: "test",
        causationId: i > 0 ? `id-${i - 1}` : null,
        correlationId: null,
      },
      { streamId, revision, position: first + BigInt(i), recordedAt: `2026-01-01T00:00:0${i % 10}.000Z` },
    );
    const { parsed: _parsed, ...stored } = e;
    out.push(stored);
    prev = e.metadata.hash;
  }
  return out;
}

const text = (events: readonly StoredEvent[]) => events.map(exportLine).join("");

describe("export lines", () => {
  it("round-trip an event exactly, data text and all, in one canonical form", () => {
    const [e] = chain(1) as [StoredEvent];
    const line = exportLine(e);
    expect(line.endsWith("\n")).toBe(true);
    expect(Object.keys(JSON.parse(line))).toEqual([
      "position",
      "streamId",
      "revision",
      "type",
      "dataJson",
      "metadata",
    ]);
    expect(parseExportLine(line.slice(0, -1), 1)).toEqual(e);
    // The same event parsed from another spelling of the same JSON is refused.
    const spaced = line.slice(0, -1).replace('"position":', '"position": ');
    expect(() => parseExportLine(spaced, 4)).toThrow(
      /line 4: position 0: not in the export's canonical form/,
    );
    expect(() => parseExportLine("{nope", 2)).toThrow(ExportLineError);
    expect(() => parseExportLine('{"position":"1"}', 3)).toThrow(/line 3: not an exported event/);
  });

  it("an export verifies by itself, and says where its chain starts", () => {
    const all = chain(10);
    const whole = verifyExportText(text(all)).result;
    expect(whole).toMatchObject({ checked: 10, firstPosition: 0n, startHash: GENESIS_HASH, break: null });
    expect(whole.headPosition).toBe(9n);
    expect(whole.headHash).toBe(all[9]?.metadata.hash);
    const tail = verifyExportText(text(all.slice(4))).result;
    expect(tail).toMatchObject({ checked: 6, firstPosition: 4n, break: null });
    expect(tail.startHash).toBe(all[3]?.metadata.hash);
    expect(verifyExportText("").result).toMatchObject({ checked: 0, headPosition: -1n, break: null });
  });

  it("a one-byte change anywhere is caught at the line and position it is in", () => {
    const all = chain(6);
    const original = text(all);
    const starts = [0];
    for (let i = 0; i < original.length; i++) if (original[i] === "\n") starts.push(i + 1);
    for (let at = 0; at < original.length; at++) {
      const ch = original[at] as string;
      const changed = `${original.slice(0, at)}${ch === "a" ? "b" : ch === "\n" ? " " : "a"}${original.slice(at + 1)}`;
      const { result } = verifyExportText(changed);
      const line = starts.filter((s) => s <= at).length;
      expect(result.break, `byte ${at}`).not.toBeNull();
      // A change in an event's hash shows at that event (its hash) and nowhere earlier.
      expect(result.break?.line, `byte ${at}`).toBe(line);
      // (Only a first line too damaged to name its position has none.)
      if (result.break?.position !== null || line > 1)
        expect(result.break?.position, `byte ${at}`).toBe(BigInt(line - 1));
      expect(result.checked).toBe(line - 1);
    }
  });

  it("an event inserted or removed shifts positions and is caught there", () => {
    const all = chain(5);
    const dropped = [...all.slice(0, 2), ...all.slice(3)];
    expect(verifyExportText(text(dropped)).result.break).toEqual({
      line: 3,
      position: 3n,
      reason: "positions are not dense: expected position 2",
    });
    expect(() => parseExport(text(dropped))).toThrow(/line 3: position 3: expected position 2/);
    const cut = text(all).slice(0, -1);
    expect(verifyExportText(cut).result.break?.reason).toMatch(/not ended/);
  });
});

describe("ExportBackend", () => {
  it("reads like the log it was exported from and refuses every write", async () => {
    const all = chain(9, 4n);
    const log = new EventLog(new ExportBackend(parseExport(text(all)), "the export x.jsonl"));
    expect(await log.headPosition()).toBe(12n);
    expect((await log.readAllStored({ fromPosition: 0n, maxCount: 100 })).map((e) => e.position)).toEqual(
      all.map((e) => e.position),
    );
    expect((await log.readAllStored({ fromPosition: 10n, maxCount: 2 })).map((e) => e.position)).toEqual([
      10n,
      11n,
    ]);
    expect(await log.readAllStored({ fromPosition: 13n })).toEqual([]);
    const b = await log.readStream("note-b");
    expect(b.map((e) => e.revision)).toEqual([0n, 1n, 2n]);
    expect(b[1]?.data).toEqual({ text: 'n3 é \u2028 "q"' });
    expect((await log.readStream("note-a", { fromRevision: 4n })).map((e) => e.revision)).toEqual([4n, 5n]);
    expect(await log.streamRevision("note-a")).toBe(5n);
    expect(await log.streamRevision("note-none")).toBe("no_stream");
    await expect(
      log.append("note-a", [{ type: "Note", data: { text: "x" } }], { expectedRevision: "any" }),
    ).rejects.toBeInstanceOf(LogReadOnlyError);
    await expect(
      log.appendMany([
        { streamId: "note-a", events: [{ type: "Note", data: { text: "x" } }], expectedRevision: "any" },
      ]),
    ).rejects.toMatchObject({ type: "log_read_only", message: "the export x.jsonl is open read-only" });
    const seen: bigint[] = [];
    const sub = log.subscribe((e) => void seen.push(e.position), { fromPosition: 0n });
    await new Promise((r) => setTimeout(r, 50));
    await sub.close();
    expect(seen).toHaveLength(9);
    await log.close();
  });
});
