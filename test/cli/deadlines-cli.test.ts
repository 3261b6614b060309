import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { shortInstant } from "@chronolog/core";
import { afterAll, describe, expect, it } from "vitest";
import { client, createToken, key, startApi } from "../api/support.js";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * Deadlines, black-box: a real `chronolog up` on a real SQLite log, tasks on schedules of a
 * minute or of seconds with deadlines of seconds, alerts delivered to a command sink that writes
 * a file, and what `why`, `task`, `alerts` and the API say. Waits are on events, never on the
 * clock; the intervals are placed so that each deadline falls a few seconds after the start.
 */
const MINUTE = 60_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Alert {
  raised: { kind: string; alertId: string; logicalDate?: string; reason: string };
  raisedAt: string;
  message: string;
}

function up(dir: string): ChildProcess {
  const p = chronologSpawn(dir, ["up", "--workers", "1", "--reconcile-ms", "200"]);
  left.processes.push(p);
  p.stdout?.resume();
  p.stderr?.resume();
  return p;
}

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode === null && p.signalCode === null) {
    p.kill("SIGTERM");
    await new Promise((r) => p.once("exit", r));
  }
}

const alerts = (dir: string) => JSON.parse(chronolog(dir, ["alerts", "--json"]).stdout || "[]") as Alert[];
const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
/** The start of the slot of `ms` milliseconds holding now, `back` slots earlier. */
const slot = (ms: number, back = 0) => new Date((Math.floor(Date.now() / ms) - back) * ms).toISOString();

function declare(dir: string, yaml: string): void {
  const file = join(dir, "d.yaml");
  writeFileSync(file, yaml);
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
}

describe("a deadline missed", () => {
  it("names the failed grandparent in another project and its stderr line; met late once it is done", async () => {
    const dir = tempDataDir("deadline-missed");
    left.dirs.push(dir);
    const sink = join(dir, "alerts.txt");
    const fixed = join(dir, "fixed");
    // The interval of the minute before this one is due at once; its deadline falls about ten
    // seconds from now, after its grandparent has failed.
    const start = slot(MINUTE, 1);
    const within = `${Math.ceil((Date.now() - Date.parse(start) - MINUTE) / 1000) + 10}s`;
    const every = `cron: "* * * * *", startDate: "${start}"`;
    declare(
      dir,
      `tasks:
  - project: ingest
    account: acme
    name: orders_raw
    ${every.replace(", ", "\n    ")}
    operator: { type: shell, command: "test -f ${fixed} || { echo starting; echo 'no such table orders' >&2; exit 3; }" }
  - { project: sales, account: acme, name: orders_clean, ${every}, parents: [ingest/acme/orders_raw/ALL], operator: { type: shell, command: "true" } }
  - project: sales
    account: acme
    name: orders_daily_report
    ${every.replace(", ", "\n    ")}
    parents: [sales/acme/orders_clean/ALL]
    deadline: { within: "${within}" }
    alerts:
      - { command: "echo {{ alert.kind }}: {{ alert.message }} >> ${sink}" }
    operator: { type: shell, command: "true" }
`,
    );
    const report = "sales/acme/orders_daily_report/ALL";
    const raw = "ingest/acme/orders_raw/ALL";
    // The task says its deadline before anything ran.
    expect(chronolog(dir, ["task", report]).stdout).toContain("deadline    ");
    const p = up(dir);
    try {
      const missed = await waitUntil(
        "the deadline to be missed",
        () => lines(sink).find((l) => l.startsWith("deadline_missed:")),
        150_000,
      );
      const day = start.replace(":00.000Z", "Z");
      expect(missed).toBe(
        `deadline_missed: ${report} ${day} missed its ${within} deadline: it waits for ${raw} ${day}, which failed (exit 3: no such table orders)`,
      );
      // why and task say the same, with the estimate; so does the API.
      const why = chronolog(dir, ["why", report]).stdout;
      expect(why).toContain(`deadline: ${day} missed its ${within} deadline`);
      expect(why).toContain(`it waits for ${raw} ${day}, which failed (exit 3: no such table orders)`);
      const shown = JSON.parse(chronolog(dir, ["task", report, "--json"]).stdout);
      expect(shown.deadline).toMatchObject({
        deadline: { within },
        logicalDate: start,
        state: "missed",
        estimate: { doneAt: null },
        cause: { task: raw, state: "failed", detail: "exit 3: no such table orders" },
      });
      const token = createToken(dir, "viewer", "read");
      const server = await startApi(left, dir, ["serve"]);
      const got = await client(server)(`/tasks/${key(report)}`, { token });
      expect(got.status).toBe(200);
      expect(got.body.deadline.cause.path).toEqual([report, "sales/acme/orders_clean/ALL", raw]);
      expect(got.body.deadline.cause.text).toBe(
        `it waits for ${raw} ${day}, which failed (exit 3: no such table orders)`,
      );
      server.child.kill("SIGTERM");

      // Fixed and retried: the report is done after its deadline, and that is recorded.
      writeFileSync(fixed, "");
      const retried = chronolog(dir, ["retry", raw, "--interval", start]);
      expect(retried.code, retried.stderr).toBe(0);
      const late = await waitUntil(
        "the deadline to be met late",
        () => lines(sink).find((l) => l.startsWith("deadline_met_late:") && l.includes(` ${day} `)),
        90_000,
      );
      expect(late).toMatch(
        new RegExp(`^deadline_met_late: ${report} ${day} met its ${within} deadline late: done `),
      );
      expect(chronolog(dir, ["task", report]).stdout).toMatch(
        new RegExp(`deadline {4}.* met its ${within} deadline late: done `),
      );
      // Raised once each, whatever else the scheduler did meanwhile.
      // (At risk too, if the failure came before the deadline: it cannot be done without an operator.)
      const mine = alerts(dir).filter((a) => a.raised.logicalDate === start);
      const kinds = mine.map((a) => a.raised.kind);
      expect(kinds.filter((k) => k === "deadline_missed")).toHaveLength(1);
      expect(kinds.filter((k) => k === "deadline_met_late")).toHaveLength(1);
      const risk = mine.filter((a) => a.raised.kind === "deadline_at_risk");
      expect(risk.length).toBeLessThanOrEqual(1);
      for (const a of risk)
        expect(a.message).toContain(
          `cannot be done without an operator: it waits for ${raw} ${day}, which failed (exit 3: no such table orders)`,
        );
    } finally {
      await stop(p);
    }
  }, 300_000);
});

describe("a deadline at risk", () => {
  it("is raised once per interval, before its deadline, from the durations recorded", async () => {
    const dir = tempDataDir("deadline-risk");
    left.dirs.push(dir);
    const sink = join(dir, "alerts.txt");
    // From the minute before this one: its interval is due at once and records the pace; the
    // next, due at the coming minute, is the one foreseen late.
    const start = slot(MINUTE, 1);
    declare(
      dir,
      `tasks:
  - project: p
    account: a
    name: slow
    cron: "* * * * *"
    startDate: "${start}"
    deadline: { within: "2s" }
    alerts:
      - { command: "echo {{ alert.kind }}: {{ alert.message }} >> ${sink}" }
    operator: { type: shell, command: "sleep 3" }
`,
    );
    const p = up(dir);
    try {
      // The first interval has no recorded duration: nothing foresees it, it is missed.
      const risky = await waitUntil(
        "an at-risk alert",
        () => alerts(dir).find((a) => a.raised.kind === "deadline_at_risk"),
        200_000,
      );
      const interval = risky.raised.logicalDate as string;
      expect(interval > start).toBe(true);
      // Raised before the deadline: the interval's end (a minute after it starts) plus 2s.
      const due = Date.parse(interval) + MINUTE + 2000;
      expect(Date.parse(risky.raisedAt)).toBeLessThan(due);
      expect(risky.message).toMatch(
        /may miss its 2s deadline \(.*\): estimated done .*, \d+s late, at the recent pace of p\/a\/slow\/ALL \d+s/,
      );
      // Its deadline passes (the attempt takes 3s): missed, then met late, with no second at-risk alert.
      const day = shortInstant(interval);
      await waitUntil(
        "the interval to be met late",
        () => lines(sink).find((l) => l.startsWith("deadline_met_late:") && l.includes(` ${day} `)),
        120_000,
      );
      const forIt = lines(sink).filter((l) => l.includes(` ${day} `));
      expect(forIt.filter((l) => l.startsWith("deadline_at_risk:"))).toHaveLength(1);
      expect(forIt.filter((l) => l.startsWith("deadline_missed:"))).toHaveLength(1);
      expect(forIt.find((l) => l.startsWith("deadline_missed:"))).toContain(
        "it is running (attempt 1 since ",
      );
    } finally {
      await stop(p);
    }
  }, 360_000);
});

describe("a deadline declared", () => {
  it("is inherited from its workflow, a task's own wins; a bad one is refused, naming where", () => {
    const dir = tempDataDir("deadline-declared");
    left.dirs.push(dir);
    const file = join(dir, "d.yaml");
    const workflow = (a: string, b: string) => `workflows:
  - name: w
    project: p
    account: a
    cron: "0 0 * * *"
    timezone: Europe/Berlin
    startDate: "2026-11-01T00:00:00Z"
    deadline: ${a}
    tasks:
      - { name: inherits, operator: { type: noop } }
      - { name: own, deadline: ${b}, operator: { type: noop } }
`;
    for (const [a, b, said] of [
      [
        `{ within: "4 hours" }`,
        `{ at: "06:00" }`,
        'workflows[0].deadline.within: within: a duration is a whole number and a unit (s, m, h or d), e.g. "30s", "90m", "4h"',
      ],
      [
        `{ within: "4h" }`,
        `{ at: "6am" }`,
        'workflows[0].tasks[1].deadline.at: p/a/own/ALL: at: a local time is "HH:MM" on a 24-hour clock, e.g. "06:00"',
      ],
      [
        `{ within: "4h" }`,
        `{ at: "06:00", within: "1h" }`,
        'workflows[0].tasks[1].deadline: p/a/own/ALL: deadline: a deadline is either { within: "4h" } or { at: "06:00" }',
      ],
      [
        `{ within: "8d" }`,
        `{ at: "06:00" }`,
        "workflows[0].deadline.within: within: a deadline is at most 7d after the end of its interval",
      ],
      [`{ before: "06:00" }`, `{ at: "06:00" }`, "workflows[0].deadline"],
    ]) {
      writeFileSync(file, workflow(a as string, b as string));
      const r = chronolog(dir, ["declare", file]);
      expect(r.code, r.stdout).toBe(2);
      expect(r.stderr).toContain(`d.yaml: ${said}`);
    }
    // Nothing was declared by the refusals.
    expect(chronolog(dir, ["tasks"]).stdout).toContain("no tasks are declared");
    writeFileSync(file, workflow(`{ within: "4h" }`, `{ at: "06:00" }`));
    const ok = chronolog(dir, ["declare", file]);
    expect(ok.code, ok.stderr).toBe(0);
    const spec = (t: string) => JSON.parse(chronolog(dir, ["task", t, "--json"]).stdout);
    expect(spec("p/a/inherits").task.spec.deadline).toEqual({ within: "4h" });
    const own = spec("p/a/own");
    expect(own.task.spec.deadline).toEqual({ at: "06:00" });
    // Daily at Berlin midnight: the first interval (the 2nd, Berlin) ends on the 3rd, due 06:00 Berlin (05:00Z).
    expect(own.deadline).toMatchObject({
      logicalDate: "2026-11-01T23:00:00.000Z",
      dueAt: "2026-11-03T05:00:00.000Z",
      state: "missed",
    });
    expect(chronolog(dir, ["task", "p/a/own"]).stdout).toContain(
      "deadline    2026-11-01T23:00Z missed its 06:00 deadline (2026-11-03T05:00Z",
    );
  }, 60_000);
});
