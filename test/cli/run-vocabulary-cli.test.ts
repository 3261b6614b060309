import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { client, createToken, key, startApi } from "../api/support.js";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * Runs and attempts in one vocabulary: a run's state, its tasks' states and counts and why it
 * waits are the same in `runs`, `run ID`, the API and the UI's graph; an attempt a shutdown
 * stopped is `interrupted` (not a failure) in the service log, `attempts`, `task`, `run ID` and
 * the API; every attempt listed says its place in the retry budget.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Summary {
  state: string;
  tasks: Record<string, string>;
  counts: Record<string, number>;
  ended: number;
  total: number;
  waiting: string[];
  text: string;
}
interface Attempt {
  attempt: number;
  status: string;
  endReason: string | null;
  budget: { place: number | null; of: number };
  budgetText: string;
}
interface View {
  summary: Summary;
  run: { status: string; try: number };
  tries: Array<{ try: number; status: string }>;
  instances: Array<{ task: string; state: string; kept: boolean; attempts: Attempt[] }>;
}

function up(
  dir: string,
  grace = "30",
): { p: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const p = chronologSpawn(dir, ["up", "--workers", "1", "--grace", grace, "--reconcile-ms", "200"]);
  left.processes.push(p);
  let err = "";
  p.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  p.stdout?.resume();
  const exited = new Promise<number | null>((resolve) => p.once("exit", (code) => resolve(code)));
  return { p, stderr: () => err, exited };
}

const json = <T>(dir: string, args: string[]): T => {
  const r = chronolog(dir, [...args, "--json"]);
  if (r.code !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
};
const text = (dir: string, args: string[]): string => {
  const r = chronolog(dir, args);
  if (r.code !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};

function setUp(label: string, yaml: (dir: string, start: string, end: string) => string) {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(start) + HOUR / 2).toISOString();
  const file = join(dir, "w.yaml");
  writeFileSync(file, yaml(dir, start, end));
  const d = chronolog(dir, ["declare", file]);
  expect(d.code, d.stderr).toBe(0);
  return { dir, runId: `etl@${start}` };
}

describe("a run says the same in every surface", () => {
  it("a rerun held by a paused task: pending, not its earlier try's failed, and why it waits", async () => {
    const { dir, runId } = setUp(
      "vocab-run",
      (_dir, start, end) => `workflows:
  - name: etl
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${start}"
    endDate: "${end}"
    tasks:
      - { name: extract, retry: { maxAttempts: 1 }, operator: { type: shell, command: "echo no input >&2; exit 3" } }
      - { name: load, parents: [extract], operator: { type: shell, command: "true" } }
`,
    );
    const EXTRACT = "p/a/extract/ALL";
    const LOAD = "p/a/load/ALL";
    const first = up(dir);
    await waitUntil(`${runId} to fail`, () => {
      const r = chronolog(dir, ["run", runId, "--json"]);
      return r.code === 0 && (JSON.parse(r.stdout) as View).run.status === "failed" ? true : undefined;
    });
    first.p.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(chronolog(dir, ["pause", EXTRACT, "--reason", "source is down"]).code).toBe(0);
    expect(chronolog(dir, ["rerun", runId, "--failed"]).code).toBe(0);

    // The CLI: try 2 runs, and has done nothing yet for either task.
    const v = json<View>(dir, ["run", runId]);
    expect(v.run.try).toBe(2);
    expect(v.summary.state).toBe("running");
    expect(v.summary.tasks).toEqual({ [EXTRACT]: "pending", [LOAD]: "pending" });
    expect(v.summary.counts).toMatchObject({ pending: 2, failed: 0, upstream_failed: 0 });
    expect(v.summary.waiting).toEqual([`${EXTRACT} is paused: source is down`]);
    expect(v.instances.map((i) => [i.task, i.state, i.attempts.length])).toEqual([
      [EXTRACT, "pending", 0],
      [LOAD, "pending", 0],
    ]);
    const shown = text(dir, ["run", runId]);
    expect(shown).toContain("tasks pending 2\n");
    expect(shown).toContain(`waiting: ${EXTRACT} is paused: source is down`);
    expect(shown).toMatch(/p\/a\/extract\/ALL +pending +- +- +- +no attempt in this try yet/);
    expect(shown).not.toMatch(/p\/a\/extract\/ALL +failed/);
    const runs = text(dir, ["runs", "etl"]);
    expect(runs).toMatch(
      /running +2 +rerun +2 +0 .* pending 2 +p\/a\/extract\/ALL is paused: source is down/,
    );
    // The first try as it ended, each attempt with its place in the budget.
    const try1 = json<View>(dir, ["run", runId, "--try", "1"]);
    expect(try1.summary.state).toBe("failed");
    expect(try1.summary.tasks).toEqual({ [EXTRACT]: "failed", [LOAD]: "upstream_failed" });
    expect(try1.instances[0]?.attempts.map((a) => [a.status, a.budgetText])).toEqual([
      ["failed", "attempt 1 of 1"],
    ]);
    expect(text(dir, ["run", runId, "--try", "1"])).toMatch(/p\/a\/extract\/ALL +failed +attempt 1 of 1 /);

    // The API says the same, and the UI's graph of the run colours its nodes so.
    const token = createToken(dir, "viewer", "read");
    const server = await startApi(left, dir, ["serve"]);
    const api = client(server);
    const list = await api("/runs?workflow=etl", { token });
    expect(list.status).toBe(200);
    expect(list.body[0].summary).toEqual(v.summary);
    expect(list.body[0].blockedBy).toEqual(v.summary.waiting);
    const one = await api(`/runs/${encodeURIComponent(runId)}`, { token });
    expect(one.body.summary).toEqual(v.summary);
    expect(one.body.blockedBy).toEqual(v.summary.waiting);
    expect(one.body.instances.map((i: { state: string }) => i.state)).toEqual(["pending", "pending"]);
    const graph = await fetch(`${server.url}/ui/graph?run=${encodeURIComponent(runId)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const nodes = ((await graph.json()) as { nodes: Array<{ id: string; state?: string }> }).nodes;
    expect(Object.fromEntries(nodes.map((n) => [n.id, n.state]))).toEqual(v.summary.tasks);
  }, 90_000);
});

describe("an attempt a shutdown stopped is interrupted, never failed", () => {
  it("SIGTERM while an attempt runs: interrupted in the service log, attempts, task, run ID and the API", async () => {
    const { dir, runId } = setUp(
      "vocab-interrupted",
      (d, start, end) => `workflows:
  - name: etl
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${start}"
    endDate: "${end}"
    tasks:
      - { name: slow, idempotent: true, retry: { maxAttempts: 3 }, operator: { type: shell, command: "[ -e ${d}/go ] && exit 0; echo started; sleep 60" } }
`,
    );
    const SLOW = "p/a/slow/ALL";
    const first = up(dir, "1");
    await waitUntil("the attempt to run", () =>
      json<Attempt[]>(dir, ["attempts", SLOW])[0]?.status === "running" ? true : undefined,
    );
    first.p.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    // The service log: an info line that says what comes next, no "attempt failed".
    const line = first
      .stderr()
      .split("\n")
      .find((l) => l.includes("attempt interrupted by the shutdown"));
    expect(line, first.stderr()).toBeDefined();
    expect(JSON.parse(line as string)).toMatchObject({
      level: 30,
      attempt: 1,
      next: "runs again at once after the restart",
    });
    expect(first.stderr()).not.toContain("attempt failed");

    const [a1] = json<Attempt[]>(dir, ["attempts", SLOW]);
    expect(a1).toMatchObject({ attempt: 1, status: "interrupted", budget: { place: null, of: 3 } });
    expect(a1?.endReason).toMatch(/^interrupted: /);
    const attempts = text(dir, ["attempts", SLOW]);
    expect(attempts).toMatch(/ 1 +not counted in its budget of 3 +\S+ +\S+ +interrupted /);
    expect(attempts).not.toMatch(/\bfailed\b/);
    expect(text(dir, ["task", SLOW])).toMatch(
      /instance +retry_wait, attempt 1 \(\S+\): interrupted, not counted in its budget of 3/,
    );
    const v = json<View>(dir, ["run", runId]);
    expect(v.instances[0]?.attempts.map((a) => a.status)).toEqual(["interrupted"]);
    expect(v.summary.tasks).toEqual({ [SLOW]: "retry_wait" });
    expect(text(dir, ["run", runId])).toMatch(/p\/a\/slow\/ALL +retry_wait +not counted in its budget of 3/);

    const token = createToken(dir, "viewer", "read");
    const server = await startApi(left, dir, ["serve"]);
    const api = client(server);
    const listed = await api(`/tasks/${key(SLOW)}/attempts`, { token });
    expect(listed.body.map((a: Attempt) => [a.status, a.budget, a.budgetText])).toEqual([
      ["interrupted", { place: null, of: 3 }, "not counted in its budget of 3"],
    ]);
    const run = await api(`/runs/${encodeURIComponent(runId)}`, { token });
    expect(run.body.instances[0].attempts[0].status).toBe("interrupted");
    server.child.kill("SIGTERM");

    // After the restart it runs again at once: that attempt is the first the budget counts.
    writeFileSync(join(dir, "go"), "");
    const second = up(dir);
    await waitUntil(`${runId} to succeed`, () =>
      json<View>(dir, ["run", runId]).run.status === "success" ? true : undefined,
    );
    second.p.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(json<Attempt[]>(dir, ["attempts", SLOW]).map((a) => [a.attempt, a.status, a.budgetText])).toEqual([
      [1, "interrupted", "not counted in its budget of 3"],
      [2, "success", "attempt 1 of 3"],
    ]);
    expect(text(dir, ["runs", "etl"])).toMatch(/success +1 +schedule +1 +1 .* success 1 +-/);
  }, 90_000);
});
