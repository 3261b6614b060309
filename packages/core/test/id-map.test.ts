import { describe, expect, it } from "vitest";
import {
  IdMap,
  type ProjectionSnapshot,
  SchedulerProjection,
  SNAPSHOT_FORMAT,
  seedIdMaps,
} from "../src/index.js";

/** A small deterministic random source (a test that fails can be run again as it was). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 0x1_0000_0000;
  };
}

describe("IdMap", () => {
  it("behaves as a Map through sets, overwrites, deletes and clears", () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const map = new IdMap<number>(seed === 1 ? 0 : 500);
      const model = new Map<string, number>();
      for (let step = 0; step < 20_000; step++) {
        const key = `p${Math.floor(next() * 3)}/acme/t${Math.floor(next() * 700)}/`;
        const r = next();
        if (r < 0.55) {
          expect(map.set(key, step)).toBe(map);
          model.set(key, step);
        } else if (r < 0.85) expect(map.delete(key)).toBe(model.delete(key));
        else if (r < 0.9999) {
          expect(map.get(key)).toBe(model.get(key));
          expect(map.has(key)).toBe(model.has(key));
        } else {
          map.clear();
          model.clear();
        }
        expect(map.size).toBe(model.size);
      }
      // The same entries in the same (insertion) order, by every way of walking them.
      expect([...map]).toEqual([...model]);
      expect([...map.keys()]).toEqual([...model.keys()]);
      expect([...map.values()]).toEqual([...model.values()]);
      const walked: Array<[string, number]> = [];
      map.forEach((v, k, m) => {
        expect(m).toBe(map);
        walked.push([k, v]);
      });
      expect(walked).toEqual([...model.entries()]);
    }
  });

  it("puts a key set again after its delete at the end, as a Map does", () => {
    const map = new IdMap<number>();
    map.set("a", 1).set("b", 2).set("c", 3);
    map.delete("a");
    map.set("a", 4);
    map.set("b", 5);
    expect([...map]).toEqual([
      ["b", 5],
      ["c", 3],
      ["a", 4],
    ]);
  });

  it("holds a million keys given its size, and grows past it", () => {
    const map = new IdMap<number>(1000);
    for (let i = 0; i < 1_000_000; i++) map.set(`p${i % 10}/acme/t${i}/`, i);
    expect(map.size).toBe(1_000_000);
    for (let i = 0; i < 1_000_000; i += 997) expect(map.get(`p${i % 10}/acme/t${i}/`)).toBe(i);
    expect(map.get("p0/acme/t1/")).toBeUndefined();
    expect(map.has("")).toBe(false);
  });

  it("lets its iterators see entries added while they run, and not those deleted", () => {
    const walk = (map: Map<string, number>): string[] => {
      for (let i = 0; i < 4; i++) map.set(`k${i}`, i);
      const seen: string[] = [];
      for (const [key, value] of map) {
        seen.push(key);
        if (value === 0) map.delete("k2");
        if (value < 3 || value === 10) map.set(`k${value + 10}`, value + 10);
      }
      return seen;
    };
    expect(walk(new IdMap())).toEqual(["k0", "k1", "k3", "k10", "k11", "k20"]);
    expect(walk(new IdMap())).toEqual(walk(new Map()));
  });

  it("moves no entry while an iterator may be among them, and closes up deleted ones after", () => {
    const map = new IdMap<number>();
    for (let i = 0; i < 12; i++) map.set(`k${i}`, i);
    const walk = map.keys();
    for (let i = 0; i < 10; i++) expect(walk.next().value).toBe(`k${i}`);
    // Deleted entries past a third of those placed, then adds past the index's room: the map
    // grows without closing up while the walk is open (closed up, the walk would skip some).
    for (let i = 0; i < 8; i++) map.delete(`k${i}`);
    for (let i = 100; i < 140; i++) map.set(`k${i}`, i);
    expect(walk.next().value).toBe("k10");
    expect(walk.next().value).toBe("k11");
    expect(walk.next().value).toBe("k100");
    expect(walk.return?.().done).toBe(true);
    // With no walk open, deleting and adding again keeps every entry, in order.
    for (let i = 100; i < 130; i++) map.delete(`k${i}`);
    for (let i = 200; i < 300; i++) map.set(`k${i}`, i);
    const expected = ["k8", "k9", "k10", "k11"];
    for (let i = 130; i < 140; i++) expected.push(`k${i}`);
    for (let i = 200; i < 300; i++) expected.push(`k${i}`);
    expect([...map.keys()]).toEqual(expected);
    expect(map.size).toBe(expected.length);
  });

  it("gives the same answers whatever the seed of its hash", () => {
    const entries = Array.from({ length: 5000 }, (_, i) => [`p${i % 7}/acme/t${i}/`, i] as const);
    const orders: string[][] = [];
    for (const seed of [0, 1, -1, 0x7fff_ffff]) {
      seedIdMaps(seed);
      const map = new IdMap<number>();
      for (const [k, v] of entries) map.set(k, v);
      for (const [k, v] of entries) expect(map.get(k)).toBe(v);
      orders.push([...map.keys()]);
    }
    seedIdMaps(0);
    for (const order of orders) expect(order).toEqual(orders[0]);
  });

  it("moves no entry while forEach is among them", () => {
    const run = (map: Map<string, number>): string[] => {
      for (let i = 0; i < 12; i++) map.set(`k${i}`, i);
      const seen: string[] = [];
      map.forEach((value, key) => {
        seen.push(key);
        if (value === 9) {
          for (let i = 0; i < 8; i++) map.delete(`k${i}`);
          for (let i = 100; i < 120; i++) map.set(`k${i}`, i);
        }
      });
      return seen;
    };
    expect(run(new IdMap())).toEqual(run(new Map()));
  });

  it("walks what is added after a clear, as a Map does, from an iterator or forEach", () => {
    const run = (map: Map<string, number>): string[] => {
      for (let i = 0; i < 6; i++) map.set(`k${i}`, i);
      const seen: string[] = [];
      const walk = map.keys();
      for (let i = 0; i < 4; i++) seen.push(walk.next().value as string);
      map.clear();
      map.set("x", 1).set("y", 2);
      for (let r = walk.next(); !r.done; r = walk.next()) seen.push(r.value);
      map.forEach((value, key) => {
        seen.push(key);
        if (value === 1) {
          map.clear();
          map.set("z", 3);
        }
      });
      return seen;
    };
    expect(run(new IdMap())).toEqual(["k0", "k1", "k2", "k3", "x", "y", "x", "z"]);
    expect(run(new IdMap())).toEqual(run(new Map()));
  });

  it("reads keys that differ only in characters past the ASCII range", () => {
    const map = new IdMap<string>();
    const keys = ["p/a/tâche/", "p/a/tache/", "p/a/t\u{1F600}/", "p/a/t\uD83D/", ""];
    for (const k of keys) map.set(k, k);
    for (const k of keys) expect(map.get(k)).toBe(k);
    expect(map.size).toBe(keys.length);
    expect(Object.prototype.toString.call(map)).toBe("[object IdMap]");
  });
});

describe("a snapshot's tasks", () => {
  it("are refused when the snapshot holds neither a list nor a map of them", () => {
    const empty = { format: SNAPSHOT_FORMAT, position: "3", instances: [], connections: [] };
    for (const tasks of [undefined, null, "tasks", 7])
      expect(() =>
        SchedulerProjection.fromSnapshot({
          ...empty,
          connectionRevisions: [],
          workflows: [],
          workflowRevisions: [],
          runs: [],
          alerts: [],
          cacheKeys: [],
          tasks,
        } as unknown as ProjectionSnapshot),
      ).toThrow("the snapshot holds no list of tasks");
  });
});
