import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Row {
  task: string;
  condition: string;
  prevIntervalStart: string | null;
  reasons: string[];
}

interface Logged {
  position: string;
  type: string;
  data: { key?: { name: string }; connection?: string };
}

/** The tasks (by name) whose attempts were dispatched on `connection`, in the log's order. */
function dispatchOrder(dir: string, connection: string, after = 0): string[] {
  const r = chronolog(dir, ["log", "read", "--json", "-n", "100000"]);
  expect(r.code).toBe(0);
  return r.stdout
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Logged)
    .filter((e) => Number(e.position) > after && e.type === "DispatchIntended")
    .filter((e) => e.data.connection === connection)
    .map((e) => e.data.key?.name ?? "?");
}

function rows(dir: string): Record<string, Row> {
  const r = chronolog(dir, ["tasks", "--json"]);
  return Object.fromEntries((JSON.parse(r.stdout || "[]") as Row[]).map((t) => [t.task.split("/")[2], t]));
}

function head(dir: string): number {
  const lines = chronolog(dir, ["log", "read", "--json", "-n", "100000"]).stdout.trim().split("\n");
  return Number((JSON.parse(lines.at(-1) as string) as Logged).position);
}

/** The hour before the current one: one interval of an hourly task, due now. */
function lastHour() {
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  // One interval each: an hour that turns during the test adds none.
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  return { latest, end };
}

describe("priorities on a contended connection, through the CLI beside a running scheduler", () => {
  it("gives the only slot to the highest priority first (downstream weights counted), and why says who is ahead", async () => {
    const dir = tempDataDir("prio");
    left.dirs.push(dir);
    const { latest, end } = lastHour();
    const hourly = `cron: "0 * * * *", startDate: "${latest}", endDate: "${end}"`;
    const file = join(dir, "wh.yaml");
    writeFileSync(
      file,
      `connections:
  - { name: wh, maxParallelism: 1 }
tasks:
  - { project: p, account: a, name: blocker, ${hourly}, connection: wh, priority: 1000, operator: { type: shell, command: "while [ ! -e ${dir}/go ]; do sleep 0.05; done" } }
  - { project: p, account: a, name: low, ${hourly}, connection: wh, priority: -5, operator: { type: noop } }
  - { project: p, account: a, name: mid, ${hourly}, connection: wh, operator: { type: noop } }
  - { project: p, account: a, name: high, ${hourly}, connection: wh, priority: 10, operator: { type: noop } }
  - { project: p, account: a, name: root, ${hourly}, connection: wh, priority: 1, priorityRule: downstream, operator: { type: noop } }
  - { project: p, account: a, name: kid, ${hourly}, parents: [p/a/root/ALL], priority: 6, operator: { type: noop } }
`,
    );
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.code, declared.stderr).toBe(0);
    const task = chronolog(dir, ["task", "p/a/root/ALL"]);
    expect(task.stdout).toContain("priority    1 (downstream: weight 7)");
    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    await waitUntil("the blocker to run and the others to be held", () => {
      const by = rows(dir);
      return by.blocker?.condition === "running" &&
        ["low", "mid", "high", "root"].every((n) => by[n]?.condition === "held")
        ? true
        : undefined;
    });
    const why = chronolog(dir, ["why", "p/a/low/ALL"]);
    expect(why.code).toBe(0);
    const at = `${latest.slice(0, 16)}Z`;
    expect(why.stdout).toContain(
      "waiting for a slot on connection wh (1 of 1 in use: p/a/blocker/ALL since ",
    );
    expect(why.stdout).toContain(
      `3 ahead of it (its priority -5): p/a/high/ALL ${at} (priority 10), p/a/root/ALL ${at} (priority 7), p/a/mid/ALL ${at} (priority 0)`,
    );
    expect(rows(dir).high?.reasons[0]).toContain("first in line for it (its priority 10)");
    writeFileSync(join(dir, "go"), "");
    await waitUntil("every task to finish its interval", () => {
      const by = rows(dir);
      return ["low", "mid", "high", "root", "kid"].every((n) => by[n]?.prevIntervalStart === latest)
        ? true
        : undefined;
    });
    expect(dispatchOrder(dir, "wh")).toEqual(["blocker", "high", "root", "mid", "low"]);
  }, 120_000);

  it("runs a backfill after a due scheduled interval, a backfill's --priority above it, and keeps that order across a restart", async () => {
    const dir = tempDataDir("prio-bf");
    left.dirs.push(dir);
    const { latest, end } = lastHour();
    const start = new Date(Date.parse(latest) - 3 * HOUR).toISOString();
    const history = (name: string) =>
      `  - { project: p, account: a, name: ${name}, cron: "0 * * * *", startDate: "${start}", endDate: "${end}", connection: wh, priority: 50, operator: { type: noop } }`;
    const first = join(dir, "history.yaml");
    writeFileSync(
      first,
      `connections:
  - { name: wh, maxParallelism: 1 }
tasks:
${history("hist")}
${history("hist2")}
`,
    );
    expect(chronolog(dir, ["declare", first]).code).toBe(0);
    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    await waitUntil("both histories to be done up to the last hour", () => {
      const by = rows(dir);
      return by.hist?.prevIntervalStart === latest && by.hist2?.prevIntervalStart === latest
        ? true
        : undefined;
    });
    // A real kill: nothing is running, and what follows is decided from the log alone.
    up.kill("SIGKILL");
    await new Promise((r) => up.once("exit", r));
    const second = join(dir, "scheduled.yaml");
    writeFileSync(
      second,
      `tasks:
  - { project: p, account: a, name: sched, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", connection: wh, operator: { type: noop } }
`,
    );
    expect(chronolog(dir, ["declare", second]).code).toBe(0);
    const hour = (h: number) => new Date(Date.parse(start) + h * HOUR).toISOString();
    const below = chronolog(dir, [
      "backfill",
      "p/a/hist/ALL",
      "--from",
      hour(0),
      "--to",
      hour(2),
      "--detach",
    ]);
    expect(below.code, below.stderr).toBe(0);
    expect(below.stdout).toContain("its intervals wait for slots after every scheduled interval");
    const bad = chronolog(dir, [
      "backfill",
      "p/a/hist2/ALL",
      "--from",
      hour(0),
      "--to",
      hour(0),
      "--priority",
      "high",
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--priority: takes an integer from -1000 to 1000, not "high"');
    const above = chronolog(dir, [
      "backfill",
      "p/a/hist2/ALL",
      "--from",
      hour(0),
      "--to",
      hour(0),
      "--priority",
      "5",
      "--detach",
    ]);
    expect(above.code, above.stderr).toBe(0);
    expect(above.stdout).toContain("its intervals compete for slots at priority 5");
    expect(chronolog(dir, ["task", "p/a/hist/ALL"]).stdout).toContain(
      "priority    50; its backfill's intervals wait after every scheduled one",
    );
    const restartedAt = head(dir);
    const again = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(again);
    await waitUntil("the backfills and the scheduled interval to be done", () => {
      const by = rows(dir);
      return by.sched?.prevIntervalStart === latest &&
        by.hist?.prevIntervalStart === latest &&
        by.hist2?.prevIntervalStart === latest &&
        dispatchOrder(dir, "wh", restartedAt).length === 5
        ? true
        : undefined;
    });
    // Without priorities the oldest interval would go first: hist's and hist2's backfills.
    expect(dispatchOrder(dir, "wh", restartedAt)).toEqual(["hist2", "sched", "hist", "hist", "hist"]);
  }, 120_000);
});
