import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import {
  advanceOnSuccess,
  CronScheduleError,
  cronGranularityMs,
  firstSlotAtOrAfter,
  lastSlotEndingBy,
  nextCronTime,
  parseCron,
  parseInstant,
  prevCronTime,
  type SchedulePosition,
  shortInstant,
  slotBefore,
  truncate,
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
function _walk(start: SchedulePosition, cron: string, tz: string, n: number): SchedulePosition[] {
  const out = [start];
  for (let i = 0; i < n; i++) out.push(advanceOnSuccess(out[out.length - 1]!, cron, tz));
  return out;
}

describe("parseCron", () => {
  it.each([
    ["*/15 * * * *"],
    ["0 */6 * * *"],
    ["0 2 * * *"],
    ["0 0 * * THU"],
    ["0 0 1 * *"],
    ["30 0 2 * * *"],
    ["@daily"],
    ["0 0 L * *"],
  ])("accepts %s", (cron) => {
    expect(parseCron(cron, "Europe/Berlin")).toEqual({
      ok: true,
      schedule: { cron, timezone: "Europe/Berlin" },
    });
  });

  it.each([
    ["61 * * * *", /61/],
    ["* * *", /expected 5 fields/],
    ["0 0 * * * * *", /got 7/],
    ["", /must not be empty/],
    ["0 0 31 2 *", /day of month/],
    ["H * * * *", /hashed values/],
    ["@sometimes", /sometimes|som/],
    ["*/0 * * * *", /every 0/],
  ])("rejects the expression %j", (cron, why) => {
    const result = parseCron(cron, "UTC");
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.kind).toBe("invalid_expression");
    expect(result.error.message).toMatch(why);
  });

  it.each([["Mars/Olympus"], ["+01:00"], [""], ["Europe/Berlinn"]])("rejects the time zone %j", (tz) => {
    const result = parseCron("0 2 * * *", tz);
    expect(result).toMatchObject({ ok: false, error: { kind: "invalid_timezone", timezone: tz } });
  });

  it.each([["UTC"], ["Europe/Paris"], ["Etc/UTC"], ["US/Eastern"], ["europe/paris"], ["Asia/Calcutta"]])(
    "takes the time zone %j, listed or an alias the formatter takes",
    (tz) => {
      expect(parseCron("0 2 * * *", tz)).toMatchObject({ ok: true, schedule: { timezone: tz } });
    },
  );

  it("names the time zone when both are wrong, and the expression when only it is", () => {
    expect(parseCron("nonsense", "Nowhere/City")).toMatchObject({ error: { kind: "invalid_timezone" } });
    expect(parseCron("nonsense", "Asia/Tokyo")).toMatchObject({ error: { kind: "invalid_expression" } });
  });

  it("makes the arithmetic throw a typed error on bad input", () => {
    expect(() => nextCronTime("0 25 * * *", "UTC", at("2026-01-01T00:00:00Z"))).toThrow(CronScheduleError);
    try {
      prevCronTime("0 2 * * *", "Mars/Olympus", at("2026-01-01T00:00:00Z"));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(CronScheduleError);
      expect((error as CronScheduleError).problem.kind).toBe("invalid_timezone");
      expect((error as CronScheduleError).message).toBe(
        'invalid time zone "Mars/Olympus": not a known IANA time zone',
      );
    }
  });

  it("rejects an invalid date", () => {
    expect(() => nextCronTime("0 2 * * *", "UTC", new Date(Number.NaN))).toThrow(/invalid date/);
  });
});

describe("nextCronTime / prevCronTime", () => {
  const daily = "0 2 * * *";

  it("next is strictly after", () => {
    expect(iso(nextCronTime(daily, "UTC", at("2026-11-28T02:00:00.000Z")))).toBe("2026-11-29T02:00:00.000Z");
    expect(iso(nextCronTime(daily, "UTC", at("2026-11-28T01:59:59.999Z")))).toBe("2026-11-28T02:00:00.000Z");
    expect(iso(nextCronTime(daily, "UTC", at("2026-11-28T02:00:00.001Z")))).toBe("2026-11-29T02:00:00.000Z");
  });

  it("prev is inclusive: a time exactly on a slot is that slot", () => {
    expect(iso(prevCronTime(daily, "UTC", at("2026-11-28T02:00:00.000Z")))).toBe("2026-11-28T02:00:00.000Z");
    expect(iso(prevCronTime(daily, "UTC", at("2026-11-28T01:59:59.999Z")))).toBe("2026-11-27T02:00:00.000Z");
    expect(iso(prevCronTime(daily, "UTC", at("2026-11-28T17:30:00.000Z")))).toBe("2026-11-28T02:00:00.000Z");
  });

  it("honours the time zone", () => {
    // 02:00 in Berlin is 01:00Z in winter.
    expect(iso(nextCronTime(daily, "Europe/Berlin", at("2026-11-28T00:00:00Z")))).toBe(
      "2026-11-28T01:00:00.000Z",
    );
    expect(iso(prevCronTime(daily, "Europe/Berlin", at("2026-11-28T00:59:00Z")))).toBe(
      "2026-11-27T01:00:00.000Z",
    );
  });

  it("slot helpers", () => {
    expect(iso(firstSlotAtOrAfter(daily, "UTC", at("2026-11-28T02:00:00Z")))).toBe(
      "2026-11-28T02:00:00.000Z",
    );
    expect(iso(firstSlotAtOrAfter(daily, "UTC", at("2026-11-28T02:00:01Z")))).toBe(
      "2026-11-29T02:00:00.000Z",
    );
    expect(iso(slotBefore(daily, "UTC", at("2026-11-28T02:00:00Z")))).toBe("2026-11-27T02:00:00.000Z");
    // Intervals ending by 29T00:00: hourly [23:00, 00:00) is the last.
    expect(iso(lastSlotEndingBy("0 * * * *", "UTC", at("2026-11-29T00:00:00Z")))).toBe(
      "2026-11-28T23:00:00.000Z",
    );
    expect(iso(lastSlotEndingBy("0 * * * *", "UTC", at("2026-11-28T23:59:00Z")))).toBe(
      "2026-11-28T22:00:00.000Z",
    );
  });

  it("fixes cron-parser's prev() on spring-forward day (it skips the shifted 03:00 slot)", () => {
    const raw = CronExpressionParser.parse(daily, {
      tz: "Europe/Berlin",
      currentDate: at("2026-03-29T12:00:00Z"),
      hashSeed: "x",
    });
    expect(raw.prev().toISOString()).toBe("2026-03-28T01:00:00.000Z");
    expect(iso(prevCronTime(daily, "Europe/Berlin", at("2026-03-29T12:00:00Z")))).toBe(
      "2026-03-29T01:00:00.000Z",
    );
  });

  it("fixes cron-parser's next() from just after the spring gap (it skips the moved 02:30)", () => {
    const cron = "30 2 * * *";
    // 01:15Z is 03:15 CEST; 02:30 that day moved to 03:30 CEST = 01:30Z.
    const raw = CronExpressionParser.parse(cron, {
      tz: "Europe/Berlin",
      currentDate: at("2026-03-29T01:15:00Z"),
      hashSeed: "x",
    });
    expect(raw.next().toISOString()).toBe("2026-03-30T00:30:00.000Z");
    expect(iso(nextCronTime(cron, "Europe/Berlin", at("2026-03-29T01:15:00Z")))).toBe(
      "2026-03-29T01:30:00.000Z",
    );
    expect(iso(nextCronTime(cron, "Europe/Berlin", at("2026-03-28T12:00:00Z")))).toBe(
      "2026-03-29T01:30:00.000Z",
    );
  });

  it("fixes cron-parser's prev() on fall-back day (it yields 02:00 twice)", () => {
    // next() has one 02:00 on 2026-10-25 (the CEST one, 00:00Z); prev agrees with it.
    expect(iso(nextCronTime(daily, "Europe/Berlin", at("2026-10-24T12:00:00Z")))).toBe(
      "2026-10-25T00:00:00.000Z",
    );
    expect(iso(prevCronTime(daily, "Europe/Berlin", at("2026-10-25T01:30:00Z")))).toBe(
      "2026-10-25T00:00:00.000Z",
    );
  });

  describe.each([
    ["Europe/Berlin", "2026-03-28T12:00:00Z"],
    ["Europe/Berlin", "2026-10-24T12:00:00Z"],
    ["America/New_York", "2026-03-07T12:00:00Z"],
    ["America/New_York", "2026-10-31T12:00:00Z"],
  ])("prev and next agree around the DST change in %s from %s", (tz, from) => {
    it.each([
      ["0 2 * * *"],
      ["30 2 * * *"],
      ["30 1 * * *"],
      ["0 * * * *"],
      ["*/15 * * * *"],
      ["0 */6 * * *"],
    ])("%s", (cron) => {
      const start = at(from).getTime();
      for (let t = start; t < start + 2 * DAY; t += 23 * MIN) {
        const p = prevCronTime(cron, tz, new Date(t));
        expect(p.getTime()).toBeLessThanOrEqual(t);
        // No slot between p and t: the next slot after p is after t.
        expect(nextCronTime(cron, tz, p).getTime()).toBeGreaterThan(t);
        // p is itself a slot: the first slot at or after p is p.
        expect(firstSlotAtOrAfter(cron, tz, p).getTime()).toBe(p.getTime());
        // And next(t) is the first slot after t: no slot in (t, next(t)).
        const n = nextCronTime(cron, tz, new Date(t));
        expect(n.getTime()).toBeGreaterThan(t);
        expect(prevCronTime(cron, tz, n).getTime()).toBe(n.getTime());
        expect(slotBefore(cron, tz, n).getTime()).toBeLessThanOrEqual(t);
      }
    });
  });
});

describe("nextCronTime / prevCronTime in any zone", () => {
  it.each([
    ["0 0 L * *"],
    ["0 0 * * 5L"],
    ["0 12 * * 1#2"],
    ["30 0 2 * * *"],
    ["*/20 9-17 * * 1-5"],
    ["0 0 29 2 *"],
    ["0 6 1,15 * 0"],
    ["@weekdays"],
    ["@monthly"],
  ])("matches cron-parser's own walk in UTC, where no clock jumps: %s", (cron) => {
    const raw = CronExpressionParser.parse(cron, { tz: "UTC", currentDate: at("2026-01-01T00:00:00Z") });
    let ours = at("2026-01-01T00:00:00Z");
    for (let i = 0; i < 60; i++) {
      const theirs = raw.next().toDate();
      ours = nextCronTime(cron, "UTC", ours);
      expect(iso(ours)).toBe(iso(theirs));
      expect(iso(prevCronTime(cron, "UTC", new Date(ours.getTime() + 999)))).toBe(iso(theirs));
    }
  });

  // Lord Howe's clock falls back from 02:00 (+11:00) to 01:30 (+10:30) on 5 April 2026 and
  // springs forward from 02:00 (+10:30) to 02:30 (+11:00) on 4 October 2026.
  const lordHowe = "Australia/Lord_Howe";

  it("a daily 02:00 in Lord Howe runs once every local day across both changes, and never throws", () => {
    for (const [from, changeDay, atChange] of [
      ["2026-03-30T00:00:00Z", "2026-04-05", "2026-04-05 02:00"],
      ["2026-09-28T00:00:00Z", "2026-10-04", "2026-10-04 02:30"],
    ] as const) {
      let t = at(from);
      const seen: string[] = [];
      for (let i = 0; i < 12; i++) {
        t = nextCronTime("0 2 * * *", lordHowe, t);
        seen.push(local(t, lordHowe));
        expect(iso(prevCronTime("0 2 * * *", lordHowe, t))).toBe(iso(t));
      }
      const days = seen.map((l) => l.slice(0, 10));
      for (let i = 1; i < days.length; i++)
        expect(Date.parse(`${days[i]}T00:00Z`) - Date.parse(`${days[i - 1]}T00:00Z`)).toBe(DAY);
      expect(seen.find((l) => l.startsWith(changeDay))).toBe(atChange);
      for (const l of seen.filter((x) => !x.startsWith(changeDay))) expect(l.slice(11)).toBe("02:00");
    }
  });

  it("every 15 minutes in Lord Howe: the half hour after the October gap runs, the April repeat twice", () => {
    const quarters = (from: string, n: number) => {
      const out: string[] = [];
      let t = at(from);
      for (let i = 0; i < n; i++) {
        t = nextCronTime("*/15 * * * *", lordHowe, t);
        out.push(iso(t));
      }
      return out;
    };
    // 01:45 +10:30, then 02:30 and 02:45 +11:00 (02:00 and 02:15 do not exist), then 03:00.
    expect(quarters("2026-10-03T15:00:00Z", 4)).toEqual([
      "2026-10-03T15:15:00.000Z",
      "2026-10-03T15:30:00.000Z",
      "2026-10-03T15:45:00.000Z",
      "2026-10-03T16:00:00.000Z",
    ]);
    // 01:30 and 01:45 at +11:00, again at +10:30, then 02:00 +10:30: every quarter of real time.
    const april = quarters("2026-04-04T14:15:00Z", 5);
    expect(april).toEqual([
      "2026-04-04T14:30:00.000Z",
      "2026-04-04T14:45:00.000Z",
      "2026-04-04T15:00:00.000Z",
      "2026-04-04T15:15:00.000Z",
      "2026-04-04T15:30:00.000Z",
    ]);
    expect(april.map((x) => local(at(x), lordHowe).slice(11))).toEqual([
      "01:30",
      "01:45",
      "01:30",
      "01:45",
      "02:00",
    ]);
  });

  it("an hourly in Lord Howe runs at the hours the clock shows, none in the gap", () => {
    const hours: string[] = [];
    let t = at("2026-10-03T14:00:00Z");
    for (let i = 0; i < 3; i++) {
      t = nextCronTime("0 * * * *", lordHowe, t);
      hours.push(local(t, lordHowe));
    }
    expect(hours).toEqual(["2026-10-04 01:00", "2026-10-04 03:00", "2026-10-04 04:00"]);
  });

  it("a field starting with * follows the clock: */15 at 02:00 in Berlin runs 8 times on fall-back day", () => {
    const cron = "*/15 2 * * *";
    const slots: string[] = [];
    let t = at("2026-10-24T12:00:00Z");
    for (let i = 0; i < 8; i++) {
      t = nextCronTime(cron, "Europe/Berlin", t);
      slots.push(iso(t));
    }
    // 02:00 to 02:45 CEST (00:00Z to 00:45Z), then again in CET (01:00Z to 01:45Z).
    expect(slots[0]).toBe("2026-10-25T00:00:00.000Z");
    expect(slots[7]).toBe("2026-10-25T01:45:00.000Z");
    // ... and never on spring-forward day, when 02:00 to 02:59 do not exist.
    const spring = nextCronTime(cron, "Europe/Berlin", at("2026-03-28T12:00:00Z"));
    expect(iso(spring)).toBe("2026-03-30T00:00:00.000Z");
  });

  it("answers the same whatever was asked before", () => {
    const cron = "*/15 * * * *";
    const points = Array.from({ length: 40 }, (_, i) => Date.parse("2026-10-03T13:00:00Z") + i * 7 * MIN);
    const ask = (order: number[]) =>
      Object.fromEntries(
        order.map((p) => [
          p,
          [prevCronTime(cron, lordHowe, new Date(p)), nextCronTime(cron, lordHowe, new Date(p))].map(iso),
        ]),
      );
    const forward = ask(points);
    const backward = ask([...points].reverse());
    const shuffled = ask(points.map((_, i) => points[(i * 17) % points.length] as number));
    expect(backward).toEqual(forward);
    expect(shuffled).toEqual(forward);
    // And they are right: 01:57 +10:30 (15:27Z) has 01:45 +10:30 before it and, after it, 02:30
    // +11:00, the first quarter after the gap.
    expect(forward[Date.parse("2026-10-03T15:27:00Z")]).toEqual([
      "2026-10-03T15:15:00.000Z",
      "2026-10-03T15:30:00.000Z",
    ]);
  });
});

describe("cronGranularityMs", () => {
  it.each([
    ["*/15 * * * *", "UTC", 15 * MIN],
    ["0 */6 * * *", "UTC", 6 * HOUR],
    ["0 2 * * *", "UTC", DAY],
    ["0 2 * * *", "Europe/Berlin", DAY],
    ["0 * * * *", "America/New_York", HOUR],
    ["0 0 * * 0", "UTC", 7 * DAY],
    // Monthly: the shortest month, February.
    ["0 0 1 * *", "UTC", 28 * DAY],
    ["@daily", "UTC", DAY],
    ["0 0 1 1 *", "UTC", 365 * DAY],
    // The real step, not the field's: 09:00 and 17:00 are 8 hours apart.
    ["0 9,17 * * *", "UTC", 8 * HOUR],
    // */7 runs at :56 then :00, four minutes later.
    ["*/7 * * * *", "UTC", 4 * MIN],
    ["30 * * * * *", "UTC", MIN],
    ["0 0 * * 1-5", "UTC", DAY],
  ])("%s in %s", (cron, tz, ms) => {
    expect(cronGranularityMs(cron, tz)).toBe(ms);
    expect(cronGranularityMs(cron, tz, at("2026-03-01T00:00:00Z"))).toBe(ms);
  });

  it("validates its input", () => {
    expect(() => cronGranularityMs("0 2 * *", "UTC")).toThrow(/expected 5 fields/);
    expect(() => cronGranularityMs("0 2 * * *", "Moon/Base")).toThrow(/invalid time zone/);
  });
});

describe("truncate (to a schedule's own slots)", () => {
  it.each([
    ["0 * * * *", "UTC", "2026-11-28T10:37:12.000Z", "2026-11-28T10:00:00.000Z"],
    ["*/15 * * * *", "UTC", "2026-11-28T10:37:12.000Z", "2026-11-28T10:30:00.000Z"],
    // Six-hourly keeps its step: 17:59 truncates to 12:00, not to the day.
    ["0 */6 * * *", "UTC", "2026-11-28T17:59:00.000Z", "2026-11-28T12:00:00.000Z"],
    ["0 2 * * *", "UTC", "2026-11-28T01:00:00.000Z", "2026-11-27T02:00:00.000Z"],
    ["0 2 * * *", "UTC", "2026-11-28T02:00:00.000Z", "2026-11-28T02:00:00.000Z"],
    // Weekly (Sunday 00:00): Wednesday 25th is in the week of Sunday 22nd.
    ["0 0 * * 0", "UTC", "2026-11-25T09:00:00.000Z", "2026-11-22T00:00:00.000Z"],
    ["0 0 1 * *", "UTC", "2026-11-25T09:00:00.000Z", "2026-11-01T00:00:00.000Z"],
    // Midnight in Berlin is 23:00Z the day before.
    ["0 0 * * *", "Europe/Berlin", "2026-11-28T22:30:00.000Z", "2026-11-27T23:00:00.000Z"],
  ])("%s in %s: %s -> %s", (cron, timezone, date, expected) => {
    expect(iso(truncate(at(date), { cron, timezone }))).toBe(expected);
  });

  it("agrees with field-based truncation where the field-based granularity is the real one", () => {
    // A daily parent truncates to the day, an hourly one to the hour.
    expect(iso(truncate(at("2026-11-28T00:00:00Z"), { cron: "0 0 * * *", timezone: "UTC" }))).toBe(
      "2026-11-28T00:00:00.000Z",
    );
    expect(iso(truncate(at("2026-11-28T05:00:00Z"), { cron: "0 * * * *", timezone: "UTC" }))).toBe(
      "2026-11-28T05:00:00.000Z",
    );
  });
});

describe("instants", () => {
  it("parses only instants with a zone", () => {
    expect(iso(parseInstant("2026-11-28T02:00:00+01:00"))).toBe("2026-11-28T01:00:00.000Z");
    expect(iso(parseInstant("2026-11-28T02:00Z"))).toBe("2026-11-28T02:00:00.000Z");
    expect(() => parseInstant("2026-11-28T02:00:00")).toThrow(/with a zone/);
    expect(() => parseInstant("2026-11-28")).toThrow(/with a zone/);
    expect(() => parseInstant("2026-13-45T02:00:00Z")).toThrow();
  });

  it("shortens for messages", () => {
    expect(shortInstant("2026-11-28T02:00:00.000Z")).toBe("2026-11-28T02:00Z");
    expect(shortInstant("2026-11-28T02:00:30.000Z")).toBe("2026-11-28T02:00:30Z");
    expect(shortInstant("2026-11-28T02:00:00.250Z")).toBe("2026-11-28T02:00:00.250Z");
  });
});
