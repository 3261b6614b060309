import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TimerQueue } from "../src/timer-queue.js";

/** A queue on a clock the test moves (the fake timers' own), with every key woken in order. */
function queue() {
  const woken: string[][] = [];
  const q = new TimerQueue((keys) => woken.push(keys), Date.now);
  return { q, woken, all: () => woken.flat() };
}

describe("TimerQueue", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.UTC(2026, 0, 1) });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("wakes each key once, at its time, earliest first", () => {
    const { q, woken } = queue();
    const t0 = Date.now();
    q.wakeAt("b", t0 + 200);
    q.wakeAt("a", t0 + 100);
    q.wakeAt("c", t0 + 200);
    expect(q.size).toBe(3);
    vi.advanceTimersByTime(99);
    expect(woken).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(woken).toEqual([["a"]]);
    vi.advanceTimersByTime(100);
    expect(woken.slice(1).map((k) => [...k].sort())).toEqual([["b", "c"]]);
    expect(q.size).toBe(0);
  });

  it("keeps a key's earliest wake-up: a later one is ignored, an earlier one replaces it", () => {
    const { q, all } = queue();
    const t0 = Date.now();
    q.wakeAt("a", t0 + 500);
    q.wakeAt("a", t0 + 900);
    q.wakeAt("a", t0 + 50);
    expect(q.size).toBe(1);
    vi.advanceTimersByTime(50);
    expect(all()).toEqual(["a"]);
    vi.advanceTimersByTime(1_000);
    expect(all()).toEqual(["a"]);
  });

  it("wakes a time already past at once, and times before the queue was made", () => {
    const { q, all } = queue();
    q.wakeAt("old", Date.now() - 86_400_000);
    q.wakeAt("now", Date.now());
    vi.advanceTimersByTime(0);
    expect(all().sort()).toEqual(["now", "old"]);
  });

  it("orders thousands of random times as a sort would, with far and equal times among them", () => {
    const { q, all } = queue();
    const t0 = Date.now();
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const want = new Map<string, number>();
    for (let i = 0; i < 5_000; i++) {
      const key = `k${i % 3_000}`;
      // Some a few days out (past a small integer's range of milliseconds), many equal.
      const at = t0 + (i % 7 === 0 ? Math.floor(rand() * 4e9) : Math.floor(rand() * 50) * 1_000);
      q.wakeAt(key, at);
      want.set(key, Math.min(want.get(key) ?? Number.POSITIVE_INFINITY, at));
    }
    expect(q.size).toBe(want.size);
    const seen: Array<[string, number]> = [];
    const step = 500;
    vi.advanceTimersByTime(0);
    for (const k of all()) seen.push([k, 0]);
    while (Date.now() - t0 <= 4e9) {
      const before = all().length;
      vi.advanceTimersByTime(Date.now() - t0 < 60_000 ? step : 1e7);
      for (const k of all().slice(before)) seen.push([k, Date.now() - t0]);
    }
    expect(seen.map(([k]) => k).sort()).toEqual([...want.keys()].sort());
    // Each key woke at the first step at or after its time, and never before it.
    for (const [k, t] of seen) {
      const at = (want.get(k) as number) - t0;
      expect(t).toBeGreaterThanOrEqual(at);
      expect(t - at).toBeLessThanOrEqual(t <= 60_000 ? step : 1e7);
    }
    expect(q.size).toBe(0);
  });
});
