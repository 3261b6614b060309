import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { cronGranularityMs, nextCronTime, parseCron, prevCronTime } from "../src/index.js";

/**
 * Plain expressions (`M H * * *`, each of M and H `*`, `*\/STEP` or one value) are read without
 * cron-parser (see plainTimes in schedule/cron.ts): their slots must be cron-parser's.
 */
const PLAIN = [
  "0 * * * *",
  "30 * * * *",
  "59 23 * * *",
  "0 0 * * *",
  "30 2 * * *",
  "* * * * *",
  "*/15 * * * *",
  "*/7 * * * *",
  "*/59 * * * *",
  "0 */6 * * *",
  "5 */23 * * *",
  "*/1 */1 * * *",
  "*/20 3 * * *",
  "7 * * * *",
];

const INSTANTS = [
  "2026-12-06T06:00:00.000Z",
  "2026-12-06T06:00:00.001Z",
  "2026-12-06T23:59:59.999Z",
  "2026-02-28T23:30:00.000Z",
  "2024-02-29T12:07:30.000Z",
  "2026-03-29T01:15:00.000Z",
];

describe("plain cron expressions", () => {
  it("give cron-parser's slots, forwards and backwards, in UTC", () => {
    for (const cron of PLAIN)
      for (const text of INSTANTS) {
        const at = new Date(text);
        const next = CronExpressionParser.parse(cron, { currentDate: at, tz: "UTC" }).next().toDate();
        expect(nextCronTime(cron, "UTC", at).toISOString(), `${cron} after ${text}`).toBe(next.toISOString());
        // prevCronTime is inclusive (a slot is its own), cron-parser's prev strict.
        const past = new Date(at.getTime() + 1000);
        const prev = CronExpressionParser.parse(cron, { currentDate: past, tz: "UTC" }).prev().toDate();
        const ours = prevCronTime(cron, "UTC", at);
        const expected =
          prev.getTime() > at.getTime() ? prevCronTime(cron, "UTC", new Date(at.getTime() - 1)) : prev;
        expect(ours.toISOString(), `${cron} at or before ${text}`).toBe(expected.toISOString());
      }
  });

  it("give the same slots as the same expression cron-parser reads, in a zone with clock changes", () => {
    // `0-59` and `0-23` are read by cron-parser; `*` follows the clock either way.
    const pairs: Array<[string, string]> = [
      ["* * * * *", "* 0-23 * * *"],
      ["0 * * * *", "0 *  * * *"],
      ["30 2 * * *", "30 2  * * *"],
      ["*/15 * * * *", "*/15 *  * * *"],
    ];
    for (const zone of ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
      for (const [plain, parsed] of pairs)
        for (const text of [
          "2026-03-29T00:10:00.000Z",
          "2026-10-25T00:40:00.000Z",
          "2026-04-05T14:50:00.000Z",
        ]) {
          const at = new Date(text);
          expect(nextCronTime(plain, zone, at).getTime(), `${plain} ${zone} ${text}`).toBe(
            nextCronTime(parsed, zone, at).getTime(),
          );
          expect(prevCronTime(plain, zone, at).getTime(), `${plain} ${zone} ${text}`).toBe(
            prevCronTime(parsed, zone, at).getTime(),
          );
        }
  });

  it("keep their granularity", () => {
    expect(cronGranularityMs("0 * * * *", "UTC")).toBe(3_600_000);
    expect(cronGranularityMs("*/15 * * * *", "UTC")).toBe(900_000);
    expect(cronGranularityMs("30 2 * * *", "UTC")).toBe(86_400_000);
    expect(cronGranularityMs("0 */6 * * *", "UTC")).toBe(6 * 3_600_000);
  });

  it("leave what is not plain to cron-parser, which refuses it as before", () => {
    for (const cron of ["60 * * * *", "0 24 * * *", "*/0 * * * *"]) {
      const parsed = parseCron(cron, "UTC");
      expect(parsed.ok, cron).toBe(false);
    }
    expect(parseCron("00 * * * *", "UTC").ok).toBe(true);
    // A step past the field's range is cron-parser's to read (it takes the first value).
    expect(nextCronTime("*/60 * * * *", "UTC", new Date("2026-12-06T06:10:00Z")).toISOString()).toBe(
      "2026-12-06T07:00:00.000Z",
    );
    expect(parseCron("0 * * * *", "UTC").ok).toBe(true);
  });
});
