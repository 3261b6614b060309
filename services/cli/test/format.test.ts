import { describe, expect, it } from "vitest";
import { table } from "../src/format.js";

describe("table", () => {
  it("aligns each column to its widest cell, the header's or a row's", () => {
    expect(
      table(
        ["TASK", "STATUS"],
        [
          ["p/a/a", "completed"],
          ["p/a/longer-name", "-"],
        ],
      ),
    ).toBe(["TASK             STATUS", "p/a/a            completed", "p/a/longer-name  -"].join("\n"));
  });

  it("takes a million rows (the whole catalogue of a large company)", () => {
    const rows = Array.from({ length: 1_000_000 }, (_, i) => [`p/a/t${i}`, "ok"]);
    const text = table(["TASK", "STATUS"], rows);
    const lines = text.split("\n");
    expect(lines).toHaveLength(1_000_001);
    expect(lines[1]).toBe("p/a/t0       ok");
    expect(lines.at(-1)).toBe("p/a/t999999  ok");
  });
});
