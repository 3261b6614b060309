import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * A daily task in Australia/Lord_Howe, whose clocks move by 30 minutes: on the first Sunday of
 * April they fall back from 02:00 (+11:00) to 01:30 (+10:30), on the first Sunday of October
 * they spring forward from 02:00 (+10:30) to 02:30 (+11:00). Both changes of 2026 are in the
 * past, so `up` catches each task up from its startDate to its endDate.
 */
const left = new Leftovers();
afterAll(() => left.clear());

interface TaskRow {
  task: string;
  condition: string;
  logicalDate: string;
  prevIntervalStart: string | null;
}
interface AttemptRow {
  logicalDate: string;
  status: string;
}

function declaration(name: string, cron: string, start: string, end: string, parents = ""): string {
  return `  - project: dst
    account: acme
    name: ${name}
    cron: "${cron}"
    timezone: Australia/Lord_Howe
    startDate: "${start}"
    endDate: "${end}"
    idempotent: true${parents}
    operator: { type: noop }
`;
}

async function walkThrough(
  label: string,
  tasks: string,
  ends: Record<string, string>,
): Promise<{ dir: string }> {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  const file = join(dir, "lord-howe.yaml");
  writeFileSync(file, `tasks:\n${tasks}`);
  const declared = chronolog(dir, ["declare", file]);
  expect(declared.code, declared.stderr).toBe(0);
  const up = chronologSpawn(dir, ["up", "--workers", "1"]);
  up.stdout?.resume();
  up.stderr?.resume();
  left.processes.push(up);
  const read = () => {
    const r = chronolog(dir, ["tasks", "--json"]);
    return r.code === 0 ? (JSON.parse(r.stdout) as TaskRow[]) : [];
  };
  // Until every task has run out its schedule; one that stops for good on the way never does,
  // and then the positions below say where it stopped.
  await waitUntil(
    `${label}: every task to end its schedule`,
    () => {
      const all = read();
      return all.length === Object.keys(ends).length && all.every((t) => t.condition === "ended")
        ? true
        : undefined;
    },
    45_000,
  ).catch(() => undefined);
  up.kill("SIGTERM");
  await new Promise((r) => (up.exitCode === null && up.signalCode === null ? up.once("exit", r) : r(null)));
  const rows = read();
  const positions = Object.fromEntries(rows.map((t) => [t.task, [t.condition, t.prevIntervalStart]]));
  expect(positions).toEqual(
    Object.fromEntries(Object.entries(ends).map(([name, end]) => [`dst/acme/${name}/ALL`, ["ended", end]])),
  );
  return { dir };
}

function succeededDates(dir: string, name: string): string[] {
  const r = chronolog(dir, ["attempts", `dst/acme/${name}/ALL`, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  const rows = JSON.parse(r.stdout) as AttemptRow[];
  // Every attempt succeeded: none ran out its lease because its success could not be applied.
  expect(rows.map((a) => a.status)).toEqual(rows.map(() => "success"));
  return rows.map((a) => a.logicalDate).sort();
}

describe("a daily 02:00 task in Australia/Lord_Howe, through `chronolog up`", () => {
  it("walks through the April fall-back: 02:00 every day, once, the last day at +10:30", async () => {
    // 02:00 +11:00 on 2 to 4 April, 02:00 +10:30 from 5 April (01:30 to 02:00 occurs twice there).
    const daily = [
      "2026-04-01T15:00:00.000Z",
      "2026-04-02T15:00:00.000Z",
      "2026-04-03T15:00:00.000Z",
      "2026-04-04T15:30:00.000Z",
      "2026-04-05T15:30:00.000Z",
      "2026-04-06T15:30:00.000Z",
      "2026-04-07T15:30:00.000Z",
    ];
    // Its child at 03:00 needs the parent's 02:00 of the same day.
    const child = [
      "2026-04-01T16:00:00.000Z",
      "2026-04-02T16:00:00.000Z",
      "2026-04-03T16:00:00.000Z",
      "2026-04-04T16:30:00.000Z",
      "2026-04-05T16:30:00.000Z",
      "2026-04-06T16:30:00.000Z",
      "2026-04-07T16:30:00.000Z",
    ];
    const { dir } = await walkThrough(
      "dst-april",
      declaration("daily", "0 2 * * *", "2026-04-01T12:00:00Z", daily.at(-1)!) +
        declaration(
          "child",
          "0 3 * * *",
          "2026-04-01T12:00:00Z",
          child.at(-1)!,
          "\n    parents: [dst/acme/daily]",
        ),
      { daily: daily.at(-1)!, child: child.at(-1)! },
    );
    expect(succeededDates(dir, "daily")).toEqual(daily);
    expect(succeededDates(dir, "child")).toEqual(child);
  }, 90_000);

  it("walks through the October spring-forward: 02:00 of 4 October, in the gap, runs at 02:30", async () => {
    // 02:00 +10:30 on 2 and 3 October; on 4 October 02:00 does not exist and runs once at 02:30
    // +11:00 (15:30Z, the same instant as 02:00 +10:30 would have been); 02:00 +11:00 after.
    const daily = [
      "2026-10-01T15:30:00.000Z",
      "2026-10-02T15:30:00.000Z",
      "2026-10-03T15:30:00.000Z",
      "2026-10-04T15:00:00.000Z",
      "2026-10-05T15:00:00.000Z",
      "2026-10-06T15:00:00.000Z",
    ];
    // Every 15 minutes from 01:00 to 03:00 on 4 October: 02:00 and 02:15 do not exist, 02:30
    // and 02:45 do and run.
    const quarter = [
      "2026-10-03T14:30:00.000Z",
      "2026-10-03T14:45:00.000Z",
      "2026-10-03T15:00:00.000Z",
      "2026-10-03T15:15:00.000Z",
      "2026-10-03T15:30:00.000Z",
      "2026-10-03T15:45:00.000Z",
      "2026-10-03T16:00:00.000Z",
    ];
    const { dir } = await walkThrough(
      "dst-october",
      declaration("daily", "0 2 * * *", "2026-10-01T12:00:00Z", daily.at(-1)!) +
        declaration("quarter", "*/15 * * * *", "2026-10-03T14:30:00Z", quarter.at(-1)!),
      { daily: daily.at(-1)!, quarter: quarter.at(-1)! },
    );
    expect(succeededDates(dir, "daily")).toEqual(daily);
    expect(succeededDates(dir, "quarter")).toEqual(quarter);
  }, 90_000);
});
