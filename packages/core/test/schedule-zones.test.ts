import { describe, expect, it } from "vitest";
import { firstSlotAtOrAfter, nextCronTime, prevCronTime, slotBefore } from "../src/index.js";

/**
 * Every zone of the system's zone database, across every clock change from 2020 to 2035: the
 * slots of a family of cron shapes near each change, against an oracle that reads the local
 * clock with Intl every 15 minutes of real time and applies the rules of the wall clock:
 * - a local time that occurs once is a slot;
 * - a local time that occurs twice is a slot each time for a schedule whose minute or hour
 *   field starts with `*`, and only the first time for one of fixed times;
 * - a local time the clock jumps over is no slot for the former, and for the latter a slot at
 *   the instant it would have been on the clock before the jump.
 * Every offset in that period is a multiple of 15 minutes, so every local quarter hour that
 * occurs occurs at a quarter hour of UTC, and stepping UTC by 15 minutes sees all of them.
 */

const MIN = 60_000;
const QUARTER = 15 * MIN;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const FROM = Date.UTC(2020, 0, 1);
const TO = Date.UTC(2036, 0, 1);
/**
 * Transitions are found by comparing offsets this far apart, then bisecting to the minute: in
 * this period no zone changes its offset twice within four weeks.
 */
const SCAN_STEP = 5 * DAY;
/** The span either side of a change whose slots are compared. */
const REACH = 5 * HOUR;

const offsetFormats = new Map<string, Intl.DateTimeFormat>();
/** The offset in minutes at `ms`, read from the zone's name for it ("GMT+10:30"). */
function offsetMinutes(zone: string, ms: number): number {
  let f = offsetFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    offsetFormats.set(zone, f);
  }
  const name = f.formatToParts(ms).find((p) => p.type === "timeZoneName")?.value ?? "";
  const m = /^GMT(?:([+-])(\d\d):(\d\d))?$/.exec(name);
  if (!m) throw new Error(`unexpected offset name ${name} in ${zone}`);
  return m[1] ? (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

/** Every change of offset in [FROM, TO), to the minute, with the offsets before and after. */
function transitions(zone: string): Array<{ at: number; before: number; after: number }> {
  const out: Array<{ at: number; before: number; after: number }> = [];
  let prev = offsetMinutes(zone, FROM);
  for (let t = FROM + SCAN_STEP; t < TO + SCAN_STEP; t += SCAN_STEP) {
    const now = offsetMinutes(zone, t);
    if (now === prev) continue;
    let lo = t - SCAN_STEP;
    let hi = t;
    while (hi - lo > MIN) {
      const mid = lo + Math.floor((hi - lo) / 2 / MIN) * MIN;
      if (offsetMinutes(zone, mid) === prev) lo = mid;
      else hi = mid;
    }
    out.push({ at: hi, before: prev, after: now });
    prev = now;
  }
  return out.filter((x) => x.at < TO);
}

interface Wall {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly weekday: number;
}

const wallFormats = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/** The walls read so far, of the zone under test: every shape of a change reads the same ones. */
const walls = new Map<string, Wall>();
function wallOf(zone: string, ms: number): Wall {
  const key = `${zone} ${ms}`;
  const known = walls.get(key);
  if (known) return known;
  const wall = readWall(zone, ms);
  walls.set(key, wall);
  return wall;
}
function readWall(zone: string, ms: number): Wall {
  let f = wallFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      weekday: "short",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
    });
    wallFormats.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(ms).map((p) => [p.type, p.value]));
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    weekday: WEEKDAYS.indexOf(parts.weekday as string),
  };
}

/** A wall time as minutes on a clock without zones, for ordering and stepping. */
const wallMinutes = (w: Wall) => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute) / MIN;
function wallAt(minutes: number): Wall {
  const d = new Date(minutes * MIN);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    weekday: d.getUTCDay(),
  };
}

/** A cron shape and a matcher of its own, written for the shapes used here. */
interface Shape {
  readonly cron: string;
  readonly matches: (w: Wall) => boolean;
  readonly followsClock: boolean;
}

function field(text: string): (value: number) => boolean {
  if (text === "*") return () => true;
  const step = /^\*\/(\d+)$/.exec(text);
  if (step) return (v) => v % Number(step[1]) === 0;
  const values = new Set(text.split(",").map(Number));
  return (v) => values.has(v);
}

function shape(cron: string): Shape {
  const [mi, h, dom, mon, dow] = cron.split(" ") as [string, string, string, string, string];
  const [fm, fh, fd, fmo, fw] = [field(mi), field(h), field(dom), field(mon), field(dow)];
  return {
    cron,
    matches: (w) => fm(w.minute) && fh(w.hour) && fd(w.day) && fmo(w.month) && fw(w.weekday),
    followsClock: mi.startsWith("*") || h.startsWith("*"),
  };
}

const SHAPES = [
  "0 * * * *",
  "30 * * * *",
  "*/15 * * * *",
  "*/30 * * * *",
  "0 */6 * * *",
  "0 0 * * *",
  "30 0 * * *",
  "0 1 * * *",
  "30 1 * * *",
  "0 2 * * *",
  "30 2 * * *",
  "45 2 * * *",
  "0 3 * * *",
  "30 23 * * *",
  "0 0 * * 0",
  "0 2 * * 0",
  "0 0 1 * *",
  "0 2 1 * *",
].map(shape);

/** The expected slots in [from, to], by reading the local clock every 15 minutes of real time. */
function oracle(zone: string, s: Shape, from: number, to: number): number[] {
  const slots = new Set<number>();
  const seen = new Set<number>();
  let prev: { at: number; wall: number } | null = null;
  for (let u = from - 4 * HOUR; u <= to + 4 * HOUR; u += QUARTER) {
    const w = wallOf(zone, u);
    const minutes = wallMinutes(w);
    if (prev && minutes - prev.wall > 15) {
      // The clock jumped forward over these quarter hours: on the clock before the jump each
      // would have been as far after prev.at as it is after prev's wall time.
      for (let m = prev.wall + 15; m < minutes; m += 15)
        if (!s.followsClock && s.matches(wallAt(m))) slots.add(prev.at + (m - prev.wall) * MIN);
    }
    if (s.matches(w) && (s.followsClock || !seen.has(minutes))) slots.add(u);
    seen.add(minutes);
    prev = { at: u, wall: minutes };
  }
  return [...slots].filter((x) => x >= from && x <= to).sort((a, b) => a - b);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Mismatches between the code under test and the oracle over [from, to], as readable lines. */
function compare(zone: string, s: Shape, from: number, to: number): string[] {
  const want = oracle(zone, s, from, to);
  const problems: string[] = [];
  const where = `${zone} ${s.cron} [${iso(from)}, ${iso(to)}]`;
  // Forward, one next() from the other.
  const forward: number[] = [];
  for (let t = firstSlotAtOrAfter(s.cron, zone, new Date(from)).getTime(); t <= to; ) {
    forward.push(t);
    t = nextCronTime(s.cron, zone, new Date(t)).getTime();
  }
  if (forward.join() !== want.join())
    problems.push(`${where}: next() gives ${forward.map(iso)}, the clock says ${want.map(iso)}`);
  // Backward, one prev() from the other, asked in the opposite order.
  const backward: number[] = [];
  for (let t = prevCronTime(s.cron, zone, new Date(to)).getTime(); t >= from; ) {
    backward.unshift(t);
    t = slotBefore(s.cron, zone, new Date(t)).getTime();
  }
  if (backward.join() !== want.join())
    problems.push(`${where}: prev() gives ${backward.map(iso)}, the clock says ${want.map(iso)}`);
  // Questions between the slots, asked out of order: the last slot at or before, the first after.
  for (let i = want.length - 1; i >= 0; i--) {
    const slot = want[i] as number;
    const later = want[i + 1];
    const mid = later === undefined ? slot + MIN : slot + Math.floor((later - slot) / 2);
    const p = prevCronTime(s.cron, zone, new Date(mid)).getTime();
    if (p !== slot) problems.push(`${where}: prev(${iso(mid)}) is ${iso(p)}, not ${iso(slot)}`);
    const n = nextCronTime(s.cron, zone, new Date(slot - 1)).getTime();
    if (n !== slot) problems.push(`${where}: next(${iso(slot - 1)}) is ${iso(n)}, not ${iso(slot)}`);
  }
  return problems;
}

const ZONES = Intl.supportedValuesOf("timeZone");

describe("slots across every clock change of every zone, 2020 to 2035", () => {
  it("finds the changes it is meant to", () => {
    expect(ZONES.length).toBeGreaterThan(300);
    // Berlin changes twice a year; Lord Howe too, by 30 minutes; Tokyo never.
    expect(transitions("Europe/Berlin")).toHaveLength(32);
    const lordHowe = transitions("Australia/Lord_Howe");
    expect(lordHowe).toHaveLength(32);
    expect(lordHowe.map((t) => Math.abs(t.after - t.before))).toEqual(lordHowe.map(() => 30));
    expect(iso(lordHowe.find((t) => t.at > Date.UTC(2026, 0, 1))?.at as number)).toBe(
      "2026-04-04T15:00:00.000Z",
    );
    expect(transitions("Asia/Tokyo")).toEqual([]);
  });

  // Each zone is checked at each of its changes with a share of the shapes, rotated from one
  // change to the next so that every shape meets every kind of change of the zone; a zone
  // without changes is checked over one day of 2026 with twice that share, rotated by zone.
  const PER_CHANGE = 3;
  it.each(ZONES.map((zone, i) => [zone, i] as const))("%s", (zone, index) => {
    const changes = transitions(zone);
    const problems: string[] = [];
    for (const c of changes) {
      // The oracle's stepping sees every local quarter hour only on offsets of whole quarters.
      expect(Math.abs(c.before % 15), `${zone} offset ${c.before} min`).toBe(0);
      expect(Math.abs(c.after % 15), `${zone} offset ${c.after} min`).toBe(0);
    }
    changes.forEach((c, i) => {
      const from = Math.floor((c.at - REACH) / QUARTER) * QUARTER;
      for (let k = 0; k < PER_CHANGE; k++) {
        const s = SHAPES[(i * PER_CHANGE + k) % SHAPES.length] as Shape;
        problems.push(...compare(zone, s, from, from + 2 * REACH));
      }
    });
    if (changes.length === 0)
      for (let k = 0; k < PER_CHANGE * 2; k++) {
        const s = SHAPES[(index * PER_CHANGE * 2 + k) % SHAPES.length] as Shape;
        problems.push(...compare(zone, s, Date.UTC(2026, 5, 1), Date.UTC(2026, 5, 2)));
      }
    walls.clear();
    expect(problems.slice(0, 10)).toEqual([]);
  });
});
