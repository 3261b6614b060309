import { describe, expect, it } from "vitest";
import { RecentMap } from "../src/recent-map.js";

describe("RecentMap", () => {
  it("keeps the entries used most recently, never more than its limit", () => {
    const m = new RecentMap<string, number>(4);
    for (let i = 0; i < 10; i++) {
      m.set(`k${i}`, i);
      expect(m.size).toBeLessThanOrEqual(4);
    }
    // The last two set are young, the two before them old; older ones are gone.
    expect(m.get("k5")).toBeUndefined();
    // Reading k6 (old) makes it young: the full young generation (k8, k9) becomes the old one,
    // and k7 is dropped.
    expect([m.get("k6"), m.get("k9"), m.get("k8"), m.get("k7")]).toEqual([6, 9, 8, undefined]);
    expect(m.size).toBeLessThanOrEqual(4);
  });

  it("an old entry read is kept as young", () => {
    const m = new RecentMap<string, number>(4);
    m.set("a", 1);
    m.set("b", 2);
    m.set("c", 3); // a and b are now old
    expect(m.get("a")).toBe(1); // a is young again, beside c
    m.set("d", 4); // the young generation (c, a) is full: it becomes old, b is dropped
    expect(m.get("b")).toBeUndefined();
    expect([m.get("a"), m.get("c"), m.get("d")]).toEqual([1, 3, 4]);
  });

  it("a value set again replaces the one held, in either generation", () => {
    const m = new RecentMap<string, number>(4);
    m.set("a", 1);
    m.set("b", 2);
    m.set("c", 3);
    m.set("a", 10);
    expect(m.get("a")).toBe(10);
    m.clear();
    expect(m.size).toBe(0);
    expect(m.get("c")).toBeUndefined();
  });
});
