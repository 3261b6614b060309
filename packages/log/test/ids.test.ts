import { randomId } from "@chronolog/log";
import { describe, expect, it } from "vitest";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("randomId", () => {
  it("makes version 4 UUIDs, all different, across many refills of its pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const id = randomId();
      expect(id).toMatch(UUID_V4);
      seen.add(id);
    }
    expect(seen.size).toBe(5000);
  });

  it("spreads its digits evenly (no byte stuck, no digit missing)", () => {
    // Every hex digit in every free position of 4,096 ids: a digit a position never takes would
    // show a byte copied wrongly or a part of the pool never drawn.
    const counts = Array.from({ length: 36 }, () => new Map<string, number>());
    for (let i = 0; i < 4096; i++) {
      const id = randomId();
      for (let p = 0; p < 36; p++) {
        const c = id[p] as string;
        counts[p]?.set(c, (counts[p]?.get(c) ?? 0) + 1);
      }
    }
    const fixed = new Map([
      [8, "-"],
      [13, "-"],
      [14, "4"],
      [18, "-"],
      [23, "-"],
    ]);
    counts.forEach((m, p) => {
      const only = fixed.get(p);
      if (only) expect([...m.keys()]).toEqual([only]);
      else if (p === 19) expect([...m.keys()].sort()).toEqual(["8", "9", "a", "b"]);
      else {
        expect(m.size, `position ${p}`).toBe(16);
        // 256 expected for each digit; far outside this, the draw is not uniform.
        for (const n of m.values()) expect(n, `position ${p}`).toBeGreaterThan(150);
      }
    });
  });
});
