import { describe, expect, it } from "vitest";
import { firstIdsAfter } from "../src/queries.js";

/** A page of ids is what sorting them all and cutting would give, without the sort. */
describe("firstIdsAfter", () => {
  const ids = ["p3/a/t2/ALL", "p1/a/t10/ALL", "p1/a/t1/ALL", "p2/a/x/ALL", "p1/a/t9/ALL", "p0/a/z/ALL"];
  const sorted = [...ids].sort();

  it("given ids in any order, when a page is asked, then it is the sorted ids' first ones", () => {
    expect(firstIdsAfter(ids, undefined, 3)).toEqual(sorted.slice(0, 3));
    expect(firstIdsAfter(ids, undefined, 100)).toEqual(sorted);
  });

  it("given a cursor, when the next page is asked, then it starts past the cursor", () => {
    expect(firstIdsAfter(ids, sorted[2], 2)).toEqual(sorted.slice(3, 5));
    expect(firstIdsAfter(ids, sorted.at(-1), 2)).toEqual([]);
    // A cursor that is no id of them: the ids above it.
    expect(firstIdsAfter(ids, "p1/a/t2", 10)).toEqual(sorted.filter((id) => id > "p1/a/t2"));
  });

  it("given many ids, when paged through, then every id comes once, in order", () => {
    const many = Array.from({ length: 1000 }, (_, i) => `p${(i * 7919) % 13}/a/t${(i * 104729) % 1000}/ALL`);
    const all = [...new Set(many)].sort();
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = firstIdsAfter(many, after, 37);
      if (page.length === 0) break;
      seen.push(...page);
      after = page.at(-1);
    }
    expect(seen).toEqual(all);
  });
});
