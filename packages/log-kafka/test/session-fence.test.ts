import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { monotonicOf, SessionFence } from "../src/session-fence.js";

/**
 * The fence of a group member: it comes down once the member has gone the session less the
 * margin since it sent the last renewal that was answered, and lifts only on a renewal sent
 * recently enough, so that a member cut off has stopped before the group can drop it.
 */
let clock = 0;
let fences = 0;
const fence = (sessionTimeoutMs = 6000, marginMs = 2000) =>
  new SessionFence({ sessionTimeoutMs, marginMs, now: () => clock, onFence: () => fences++ });

beforeEach(() => {
  vi.useFakeTimers();
  clock = 1_000_000;
  fences = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

/** Moves the fence's clock and the timers together. */
function advance(ms: number): void {
  for (let left = ms; left > 0; left -= 10) {
    const step = Math.min(10, left);
    clock += step;
    vi.advanceTimersByTime(step);
  }
}

describe("SessionFence", () => {
  it("is down until the first renewal, which lifts it", () => {
    const f = fence();
    expect(f.fenced).toBe(true);
    expect(f.renewed(clock - 50)).toBe(true);
    expect(f.fenced).toBe(false);
    expect(fences).toBe(0);
  });

  it("comes down the session less the margin after the renewal was sent, not answered", () => {
    const f = fence();
    const sentAt = clock;
    advance(1500); // answered 1.5 s after it was sent
    f.renewed(sentAt);
    advance(4000 - 1500 - 10);
    expect(f.fenced).toBe(false);
    expect(fences).toBe(0);
    advance(10);
    expect(f.fenced).toBe(true);
    expect(fences).toBe(1);
    expect(f.sinceRenewalMs).toBe(4000);
    // It comes down once; nothing more is said while it stays down.
    advance(10_000);
    expect(fences).toBe(1);
  });

  it("keeps up while renewals come in, each moving the deadline", () => {
    const f = fence();
    f.renewed(clock);
    for (let i = 0; i < 20; i++) {
      advance(1000);
      f.renewed(clock - 20);
    }
    expect(f.fenced).toBe(false);
    expect(fences).toBe(0);
    expect(f.deadline).toBe(clock - 20 + 4000);
  });

  it("says it is down by the clock even before its timer has run", () => {
    const f = fence();
    f.renewed(clock);
    clock += 4000; // a busy event loop: the timer has not run yet
    expect(f.fenced).toBe(true);
    expect(fences).toBe(0);
    vi.advanceTimersByTime(4000);
    expect(fences).toBe(1);
  });

  it("lifts only on a renewal sent less than the session less the margin ago", () => {
    const f = fence();
    f.renewed(clock);
    const lastBeforeTheCut = clock + 900;
    advance(5000);
    expect(fences).toBe(1);
    // A heartbeat sent before the fence came down, answered after: the coordinator may have
    // heard it a moment after it was sent, or not at all since; it proves nothing now.
    expect(f.renewed(lastBeforeTheCut)).toBe(false);
    expect(f.fenced).toBe(true);
    // One sent just now and answered: the coordinator still knows the member.
    expect(f.renewed(clock - 30)).toBe(true);
    expect(f.fenced).toBe(false);
    // An older answer that comes in later does not move the deadline back.
    f.renewed(lastBeforeTheCut);
    expect(f.deadline).toBe(clock - 30 + 4000);
    // And it can come down again.
    advance(4000);
    expect(fences).toBe(2);
  });

  it("does nothing once stopped", () => {
    const f = fence();
    f.renewed(clock);
    f.stop();
    advance(10_000);
    expect(fences).toBe(0);
    expect(f.renewed(clock)).toBe(false);
  });

  it("takes a margin from 0 up to less than the session", () => {
    expect(() => fence(6000, 6000)).toThrow(RangeError);
    expect(() => fence(6000, -1)).toThrow(RangeError);
    expect(fence(6000, 0).fenceAfterMs).toBe(6000);
  });
});

describe("monotonicOf", () => {
  it("puts a wall-clock time on the monotonic clock, measured back from now", () => {
    expect(monotonicOf(9_000, 500, 10_000)).toBe(-500);
    // A wall clock stepped back since the request was sent: never later than now.
    expect(monotonicOf(12_000, 500, 10_000)).toBe(500);
  });
});
