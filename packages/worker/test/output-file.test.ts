import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cutMarker, OutputFile, outputPathFor } from "../src/output-file.js";

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function write(chunks: readonly string[], max: number) {
  root = mkdtempSync(join(tmpdir(), "chronolog-output-"));
  const f = OutputFile.open(root, "tok/1", max);
  for (const c of chunks) f?.write(c);
  return f?.close();
}

describe("OutputFile", () => {
  it("keeps output under the limit whole, and hashes what it wrote", () => {
    const info = write(["hello ", "world\n"], 100);
    const bytes = readFileSync(outputPathFor(root, "tok/1"));
    expect(bytes.toString()).toBe("hello world\n");
    expect(info).toEqual({
      path: outputPathFor(root, "tok/1"),
      bytes: 12,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      cutBytes: 0,
    });
  });

  it("past the limit keeps the first and last halves around a marker, whatever the chunk sizes", () => {
    const text = Array.from({ length: 500 }, (_, i) => `line ${i}\n`).join("");
    for (const size of [1, 7, 64, 1000, text.length]) {
      const chunks: string[] = [];
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
      const info = write(chunks, 200);
      const expected = `${text.slice(0, 100)}${cutMarker(text.length - 200)}${text.slice(-100)}`;
      expect(readFileSync(outputPathFor(root, "tok/1"), "utf8")).toBe(expected);
      expect(info?.cutBytes).toBe(text.length - 200);
      expect(info?.bytes).toBe(Buffer.byteLength(expected));
      expect(info?.sha256).toBe(createHash("sha256").update(expected).digest("hex"));
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("with a limit of 0 keeps no file", () => {
    root = mkdtempSync(join(tmpdir(), "chronolog-output-"));
    expect(OutputFile.open(root, "t", 0)).toBeUndefined();
  });
});
