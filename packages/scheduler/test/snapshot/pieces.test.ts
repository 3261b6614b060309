import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { linesOf, snapshotPieces } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import { checkpointed, dir, layout, TASKS, useSnapshotFixture } from "./fixture.js";

useSnapshotFixture();

describe("the checkpoint's pieces and lines", () => {
  it("writes whole lines in pieces of the size asked, the same text as one piece", async () => {
    const written = await checkpointed();
    const body = { snapshot: written.toSnapshot(), headHash: "h" };
    const whole = snapshotPieces(body);
    expect(whole).toHaveLength(1);
    expect(snapshotPieces(body, 100).join("")).toBe(whole[0]);
    // In blocks of 4 tasks, each block's line longer than a piece: a piece at least per block.
    const [text] = snapshotPieces(body, 1 << 20, 4) as [string];
    const { lines, header } = layout(text);
    expect(header.blocks).toBe(TASKS / 4);
    const pieces = snapshotPieces(body, 100, 4);
    expect(pieces.length).toBeGreaterThanOrEqual(header.blocks);
    const ends: string[] = [];
    for (const [n, p] of pieces.entries()) {
      expect(p.endsWith("\n")).toBe(true);
      const held = p.slice(0, -1).split("\n");
      ends.push(...held);
      // A piece ends at the first whole line that brings it to the size asked.
      if (n === pieces.length - 1) continue;
      expect(p.length).toBeGreaterThanOrEqual(100);
      if (n > 0) expect(p.length - ((held.at(-1) as string).length + 1)).toBeLessThan(100);
    }
    expect(ends).toEqual(lines.slice(0, -1));
    expect(pieces.join("")).toBe(text);
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
