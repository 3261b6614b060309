import {
  ChronologError,
  dateArg,
  dayIn,
  dayStart,
  intervalOn,
  rangeEnd,
  rangeStart,
  slotsOnDay,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";

/** Dates as people type them: a day names the intervals that start on it in the schedule's zone. */
const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(ChronologError);
    return (error as ChronologError & { issues: Array<{ message: string }> }).issues[0]?.message ?? "";
  }
  throw new Error("not refused");
};

describe("dateArg", () => {
  it("reads a day or an instant with its zone, and refuses the rest, naming both forms", () => {
    expect(dateArg("2026-12-01", "--from")).toEqual({ text: "2026-12-01", day: "2026-12-01" });
    expect(dateArg("2026-12-01T03:30Z", "--from")).toEqual({
      text: "2026-12-01T03:30Z",
      instant: "2026-12-01T03:30:00.000Z",
    });
    expect(refusal(() => dateArg("2026-02-30", "--from"))).toBe('"2026-02-30" is not a day of the calendar');
    expect(refusal(() => dateArg("2026-12-01T03:30", "--from"))).toContain(
      '"2026-12-01T03:30" is not an instant or a day: use a day (2026-11-30) or an instant with its zone',
    );
  });
});

describe("a day in a zone", () => {
  it("starts at the zone's midnight, or where the clock jumps over it", () => {
    expect(dayStart("2026-12-01", "UTC").toISOString()).toBe("2026-12-01T00:00:00.000Z");
    expect(dayStart("2026-12-01", "Europe/Berlin").toISOString()).toBe("2026-11-30T23:00:00.000Z");
    expect(dayStart("2026-12-01", "Pacific/Kiritimati").toISOString()).toBe("2026-11-30T10:00:00.000Z");
    expect(dayStart("2026-12-01", "Pacific/Pago_Pago").toISOString()).toBe("2026-12-01T11:00:00.000Z");
    // Havana's clock springs from 00:00 to 01:00 on 2026-03-08: the day starts at 01:00 (UTC-4).
    expect(dayStart("2026-03-08", "America/Havana").toISOString()).toBe("2026-03-08T05:00:00.000Z");
    for (const zone of ["UTC", "Europe/Berlin", "America/Havana", "Australia/Lord_Howe", "Asia/Kolkata"])
      for (const day of [
        "2026-03-08",
        "2026-03-29",
        "2026-04-05",
        "2026-10-04",
        "2026-10-25",
        "2026-11-01",
      ]) {
        const start = dayStart(day, zone);
        expect(dayIn(zone, start), `${day} ${zone}`).toBe(day);
        expect(dayIn(zone, new Date(start.getTime() - 1)) < day, `${day} ${zone}`).toBe(true);
      }
  });

  it("as a range's bounds: from its first instant, to its last (the day's intervals included)", () => {
    expect(rangeStart(dateArg("2026-12-01", "--from"), "Europe/Berlin").toISOString()).toBe(
      "2026-11-30T23:00:00.000Z",
    );
    expect(rangeEnd(dateArg("2026-12-02", "--to"), "UTC").toISOString()).toBe("2026-12-02T23:59:59.999Z");
    // With a time, it means the instant, as before.
    expect(rangeEnd(dateArg("2026-12-02T00:00Z", "--to"), "UTC").toISOString()).toBe(
      "2026-12-02T00:00:00.000Z",
    );
  });

  it("holds the slots that start on it: hourly 24 (23 and 25 on clock changes), daily one, weekly one or none", () => {
    expect(slotsOnDay("0 * * * *", "UTC", "2026-12-01")).toHaveLength(24);
    expect(slotsOnDay("0 * * * *", "Europe/Berlin", "2026-03-29")).toHaveLength(23);
    expect(slotsOnDay("0 * * * *", "Europe/Berlin", "2026-10-25")).toHaveLength(25);
    expect(slotsOnDay("30 3 * * *", "UTC", "2026-12-01")).toEqual(["2026-12-01T03:30:00.000Z"]);
    expect(slotsOnDay("30 3 * * *", "Europe/Berlin", "2026-12-01")).toEqual(["2026-12-01T02:30:00.000Z"]);
    // Mondays at 06:00: 2026-11-30 is a Monday.
    expect(slotsOnDay("0 6 * * 1", "UTC", "2026-11-30")).toEqual(["2026-11-30T06:00:00.000Z"]);
    expect(slotsOnDay("0 6 * * 1", "UTC", "2026-12-01")).toEqual([]);
  });
});

describe("intervalOn", () => {
  const daily = { cron: "30 3 * * *", timezone: "UTC" };
  it("a day names the one interval starting on it; an instant itself", () => {
    expect(intervalOn(dateArg("2026-12-01", "--interval"), daily, "--interval", "p/a/t/ALL")).toBe(
      "2026-12-01T03:30:00.000Z",
    );
    expect(intervalOn(dateArg("2026-12-01T00:00Z", "--interval"), daily, "--interval", "p/a/t/ALL")).toBe(
      "2026-12-01T00:00:00.000Z",
    );
  });

  it("refuses a day with several intervals or none, saying which there are", () => {
    expect(
      refusal(() =>
        intervalOn(
          dateArg("2026-12-01", "--interval"),
          { cron: "0 * * * *", timezone: "UTC" },
          "--interval",
          "h",
        ),
      ),
    ).toBe(
      "2026-12-01 holds 24 intervals of h (0 * * * * (UTC)), 2026-12-01T00:00Z .. 2026-12-01T23:00Z: name one with its time, e.g. 2026-12-01T00:00Z",
    );
    // A task's own: none before its first interval (it started at 10:00 that day).
    const started = { cron: "0 * * * *", timezone: "UTC", startDate: "2026-12-01T09:30:00Z" };
    expect(refusal(() => intervalOn(dateArg("2026-12-01", "--interval"), started, "--interval", "h"))).toBe(
      "2026-12-01 holds 14 intervals of h (0 * * * * (UTC)), 2026-12-01T10:00Z .. 2026-12-01T23:00Z: name one with its time, e.g. 2026-12-01T10:00Z",
    );
    expect(refusal(() => intervalOn(dateArg("2026-11-30", "--interval"), started, "--interval", "h"))).toBe(
      "no interval of h starts on 2026-11-30 in its zone (0 * * * * (UTC)); the next starts 2026-12-01T10:00Z",
    );
    // A task that starts late on the day: its one interval there is the one named.
    expect(
      intervalOn(
        dateArg("2026-12-01", "--interval"),
        { cron: "0 * * * *", timezone: "UTC", startDate: "2026-12-01T23:00:00Z" },
        "--interval",
        "h",
      ),
    ).toBe("2026-12-01T23:00:00.000Z");
    expect(
      refusal(() =>
        intervalOn(
          dateArg("2026-12-01", "--interval"),
          { cron: "0 6 * * 1", timezone: "UTC" },
          "--interval",
          "w",
        ),
      ),
    ).toBe(
      "no interval of w starts on 2026-12-01 in its zone (0 6 * * 1 (UTC)); the next starts 2026-12-07T06:00Z",
    );
  });
});
