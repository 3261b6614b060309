import { describe, expect, it } from "vitest";
import {
  advanceOnSuccess,
  dataInterval,
  initialPosition,
  isDue,
  nextCronTime,
  parseInstant,
  resetTo,
  type SchedulePosition,
} from "../src/index.js";

const at = (iso: string) => new Date(iso);
const iso = (date: Date) => date.toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** Local calendar date and wall time of an instant in a zone, e.g. `2026-03-29 03:00`. */
function local(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(date);
  const get = (type: string) => parts.find((p) => p.type === type)?.value;
  return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}`;
}

/** Advances a position n times, returning every position visited (the first included). */
function walk(start: SchedulePosition, cron: string, tz: string, n: number): SchedulePosition[] {
  const out = [start];
  for (let i = 0; i < n; i++) out.push(advanceOnSuccess(out[out.length - 1]!, cron, tz));
  return out;
}

describe("schedule position", () => {
  const daily = { cron: "0 2 * * *", timezone: "UTC", catchup: true };

  it("starts at the first slot at or after startDate, due at the end of that interval", () => {
    const now = at("2026-01-01T00:00:00Z");
    expect(initialPosition({ ...daily, startDate: "2026-11-28T10:00:00.000Z" }, now)).toEqual({
      logicalDate: "2026-11-29T02:00:00.000Z",
      prevIntervalStart: null,
      nextRunDate: "2026-11-30T02:00:00.000Z",
    });
    expect(initialPosition({ ...daily, startDate: "2026-11-28T02:00:00.000Z" }, now).logicalDate).toBe(
      "2026-11-28T02:00:00.000Z",
    );
  });

  it("gives the data interval [logical, next slot)", () => {
    expect(dataInterval("2026-11-28T02:00:00.000Z", "0 2 * * *", "UTC")).toEqual({
      start: "2026-11-28T02:00:00.000Z",
      end: "2026-11-29T02:00:00.000Z",
    });
    expect(dataInterval("2026-11-28T12:00:00.000Z", "0 */6 * * *", "UTC").end).toBe(
      "2026-11-28T18:00:00.000Z",
    );
  });

  it("advances from the schedule: prev := logical, both dates one step on", () => {
    const start = initialPosition(
      { ...daily, startDate: "2026-11-28T02:00:00.000Z" },
      at("2026-11-28T00:00:00Z"),
    );
    expect(advanceOnSuccess(start, "0 2 * * *", "UTC")).toEqual({
      logicalDate: "2026-11-29T02:00:00.000Z",
      prevIntervalStart: "2026-11-28T02:00:00.000Z",
      nextRunDate: "2026-11-30T02:00:00.000Z",
    });
  });

  it("advances nextRunDate from itself, not from the logical date or the clock", () => {
    const odd: SchedulePosition = {
      logicalDate: "2026-11-28T02:00:00.000Z",
      prevIntervalStart: null,
      nextRunDate: "2026-12-05T02:00:00.000Z",
    };
    expect(advanceOnSuccess(odd, "0 2 * * *", "UTC").nextRunDate).toBe("2026-12-06T02:00:00.000Z");
  });

  it("is due when nextRunDate is at or before now", () => {
    const p = initialPosition(
      { ...daily, startDate: "2026-11-28T02:00:00.000Z" },
      at("2026-11-28T00:00:00Z"),
    );
    expect(isDue(p, at("2026-11-29T01:59:59.999Z"))).toBe(false);
    expect(isDue(p, at("2026-11-29T02:00:00.000Z"))).toBe(true);
  });

  it.each([
    ["0 2 * * *", "2026-11-18T00:00:00.000Z", "2026-11-28T12:00:00Z", 10],
    ["0 * * * *", "2026-11-26T00:00:00.000Z", "2026-11-28T05:30:00Z", 53],
    // Eight quarters end by 02:00 (the last, [01:45, 02:00), is due at 02:00 exactly).
    ["*/15 * * * *", "2026-11-28T00:00:00.000Z", "2026-11-28T02:00:00Z", 8],
    ["0 0 * * 0", "2026-10-01T00:00:00.000Z", "2026-11-28T12:00:00Z", 7],
  ])(
    "catch-up is repeated advance: %s from %s is due at %s this many times",
    (cron, startDate, nowIso, count) => {
      const now = at(nowIso);
      let p = initialPosition({ cron, timezone: "UTC", startDate, catchup: true }, now);
      let due = 0;
      while (isDue(p, now)) {
        p = advanceOnSuccess(p, cron, "UTC");
        due++;
      }
      expect(due).toBe(count);
      // Caught up: the next run is in the future and the last finished interval has ended.
      expect(parseInstant(p.nextRunDate).getTime()).toBeGreaterThan(now.getTime());
      expect(nextCronTime(cron, "UTC", parseInstant(p.prevIntervalStart!)).getTime()).toBeLessThanOrEqual(
        now.getTime(),
      );
    },
  );

  it("without catch-up, starts at the latest interval already due, and runs it once", () => {
    const now = at("2026-11-28T12:00:00Z");
    const p = initialPosition({ ...daily, catchup: false, startDate: "2026-11-01T00:00:00.000Z" }, now);
    expect(p).toEqual({
      logicalDate: "2026-11-27T02:00:00.000Z",
      prevIntervalStart: null,
      nextRunDate: "2026-11-28T02:00:00.000Z",
    });
    expect(isDue(p, now)).toBe(true);
    expect(isDue(advanceOnSuccess(p, "0 2 * * *", "UTC"), now)).toBe(false);
  });

  it("without catch-up, never starts before startDate", () => {
    const now = at("2026-11-28T12:00:00Z");
    const p = initialPosition({ ...daily, catchup: false, startDate: "2026-11-28T00:00:00.000Z" }, now);
    expect(p.logicalDate).toBe("2026-11-28T02:00:00.000Z");
    expect(isDue(p, now)).toBe(false);
  });

  it("resets for a backfill with prevIntervalStart at the slot before", () => {
    expect(resetTo("0 2 * * *", "UTC", at("2026-08-30T00:00:00Z"))).toEqual({
      logicalDate: "2026-08-30T02:00:00.000Z",
      prevIntervalStart: "2026-08-29T02:00:00.000Z",
      nextRunDate: "2026-08-31T02:00:00.000Z",
    });
    expect(resetTo("0 2 * * *", "UTC", at("2026-08-30T02:00:00Z")).logicalDate).toBe(
      "2026-08-30T02:00:00.000Z",
    );
  });

  it("a 90-day backfill is 90 due intervals in a row", () => {
    const now = at("2026-11-28T12:00:00Z");
    let p = resetTo("0 2 * * *", "UTC", at("2026-08-30T00:00:00Z"));
    let due = 0;
    while (isDue(p, now)) {
      p = advanceOnSuccess(p, "0 2 * * *", "UTC");
      due++;
    }
    expect(due).toBe(90);
    expect(p.prevIntervalStart).toBe("2026-11-27T02:00:00.000Z");
  });
});

describe("DST", () => {
  const cases = [
    ["Europe/Berlin", "2026-03-27T00:00:00.000Z", "2026-03-29", "2026-10-23T00:00:00.000Z", "2026-10-25"],
    ["America/New_York", "2026-03-06T12:00:00.000Z", "2026-03-08", "2026-10-30T12:00:00.000Z", "2026-11-01"],
  ] as const;

  describe.each(cases)("0 2 * * * in %s", (tz, springStart, springDay, fallStart, fallDay) => {
    const cron = "0 2 * * *";

    it("runs once on spring-forward day, at the shifted 03:00, skipping and repeating no day", () => {
      const p = initialPosition(
        { cron, timezone: tz, startDate: springStart, catchup: true },
        at(springStart),
      );
      const logicals = walk(p, cron, tz, 4).map((x) => local(parseInstant(x.logicalDate), tz));
      const days = logicals.map((l) => l.slice(0, 10));
      expect(new Set(days).size).toBe(5);
      expect(logicals.find((l) => l.startsWith(springDay))).toBe(`${springDay} 03:00`);
      for (const l of logicals.filter((x) => !x.startsWith(springDay))) expect(l.slice(11)).toBe("02:00");
      // Consecutive local days.
      for (let i = 1; i < days.length; i++)
        expect(Date.parse(`${days[i]}T00:00Z`) - Date.parse(`${days[i - 1]}T00:00Z`)).toBe(DAY);
    });

    it("runs once on fall-back day although 02:00 or its neighbours occur twice", () => {
      const p = initialPosition({ cron, timezone: tz, startDate: fallStart, catchup: true }, at(fallStart));
      const logicals = walk(p, cron, tz, 4).map((x) => local(parseInstant(x.logicalDate), tz));
      const days = logicals.map((l) => l.slice(0, 10));
      expect(new Set(days).size).toBe(5);
      expect(days).toContain(fallDay);
      for (const l of logicals) expect(l.slice(11)).toBe("02:00");
    });

    it("nextRunDate stays one interval after logicalDate across both changes", () => {
      for (const start of [springStart, fallStart]) {
        const p = initialPosition({ cron, timezone: tz, startDate: start, catchup: true }, at(start));
        for (const x of walk(p, cron, tz, 5))
          expect(x.nextRunDate).toBe(iso(nextCronTime(cron, tz, parseInstant(x.logicalDate))));
      }
    });
  });

  describe.each([
    ["Europe/Berlin", "2026-10-24T20:00:00.000Z", "2026-10-25", 25],
    ["Europe/Berlin", "2026-03-28T20:00:00.000Z", "2026-03-29", 23],
    ["America/New_York", "2026-10-31T20:00:00.000Z", "2026-11-01", 25],
    ["America/New_York", "2026-03-07T20:00:00.000Z", "2026-03-08", 23],
  ])("hourly in %s from %s", (tz, start, day, hoursThatDay) => {
    it(`has one interval per UTC hour: ${hoursThatDay} on ${day}`, () => {
      const cron = "0 * * * *";
      const p = initialPosition({ cron, timezone: tz, startDate: start, catchup: true }, at(start));
      const logicals = walk(p, cron, tz, 48).map((x) => parseInstant(x.logicalDate).getTime());
      for (let i = 1; i < logicals.length; i++) expect(logicals[i]! - logicals[i - 1]!).toBe(HOUR);
      expect(logicals.filter((t) => local(new Date(t), tz).startsWith(day))).toHaveLength(hoursThatDay);
    });
  });
});
