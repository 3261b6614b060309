import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * Words that do not mislead: counts in their number, empty listings said in a sentence, and the
 * log, a task's history and a tail of the log as one readable line per event (--json: the events).
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

const ORDERS = readFileSync(new URL("../../docs/examples/orders.yaml", import.meta.url), "utf8");

/** `chronolog ARGS` left running, with what it printed on each output so far. */
function running(dir: string, args: string[]): { child: ChildProcess; out: () => string; err: () => string } {
  const child = spawn(process.execPath, [CLI, "--data-dir", dir, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  left.processes.push(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return { child, out: () => out, err: () => err };
}

describe("empty listings say so in a sentence", () => {
  it("alerts, runs, tasks, attempts, tokens and the log", () => {
    const dir = tempDataDir("words-empty");
    left.dirs.push(dir);
    expect(chronolog(dir, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"first"}']).code).toBe(
      0,
    );
    const said = (args: string[]) => {
      const r = chronolog(dir, args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };
    expect(said(["alerts"])).toBe("no alerts\n");
    expect(said(["runs"])).toBe("no runs\n");
    expect(said(["tasks"])).toBe("no tasks are declared\n");
    expect(said(["token", "list"])).toBe("no tokens issued\n");
    expect(said(["log", "read", "--from", "5"])).toBe("no events from position 5 (the log's head is at 0)\n");
    // --json stays the data: an empty list, no events.
    expect(said(["alerts", "--json"]).trim()).toBe("[]");
    expect(said(["log", "read", "--from", "5", "--json"])).toBe("");
    writeFileSync(join(dir, "orders.yaml"), ORDERS);
    expect(chronolog(dir, ["declare", join(dir, "orders.yaml")]).code).toBe(0);
    expect(said(["attempts", "ingest/acme/orders_raw"])).toBe(
      "ingest/acme/orders_raw/ALL has no attempts yet\n",
    );
    expect(said(["runs", "orders_daily"])).toBe("no runs of workflow orders_daily\n");
    // A count of one is in the singular.
    expect(said(["log", "verify"])).toMatch(/^ok: 6 events verified/);
    const one = tempDataDir("words-one");
    left.dirs.push(one);
    expect(chronolog(one, ["log", "append", "note-ops", "-t", "Note", "-d", '{"text":"only"}']).code).toBe(0);
    expect(chronolog(one, ["log", "verify"]).stdout).toMatch(/^ok: 1 event verified, head at position 0/);
  });
});

describe("one readable line per event", () => {
  const dir = tempDataDir("words-events");
  left.dirs.push(dir);
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  const file = join(dir, "t.yaml");
  const declaration = (command: string) => `connections:
  - { name: db, operators: [shell] }
workflows:
  - name: nightly
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${latest}"
    endDate: "${end}"
    tasks:
      - { name: bad, connection: db, operator: { type: shell, command: "${command}" } }
`;

  it("the service log counts what a declaration did in its number", async () => {
    const up = chronologSpawn(dir, ["up", "--workers", "1", "--http", "off"]);
    left.processes.push(up);
    let log = "";
    up.stderr?.on("data", (d: Buffer) => {
      log += d.toString();
    });
    await waitUntil("chronolog to be up", () => (log.includes("chronolog is up") ? true : undefined));
    const tail = running(dir, ["log", "tail"]);
    await waitUntil("log tail to say where it follows from", () =>
      tail.err().includes("following the log from position") ? true : undefined,
    );
    expect(tail.err()).toMatch(
      /^following the log from position \d+ \((the log is empty|the head is at \d+); Ctrl-C to stop\)\n$/,
    );
    writeFileSync(file, declaration("echo loading >&2; echo no such table: orders >&2; exit 3"));
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    await waitUntil("the failure to be logged", () => (log.includes("interval failed") ? true : undefined));
    const declared = log.split("\n").find((l) => l.includes("declared: ")) ?? "";
    expect(declared).toContain("declared: 1 connection, 1 workflow, 1 new task");
    // What the tail printed meanwhile: one line per event, in words, nothing raw.
    await waitUntil("the tail to show the failure", () =>
      tail.out().includes("AttemptFailed") ? true : undefined,
    );
    const lines = tail.out().trim().split("\n");
    for (const l of lines) {
      expect(l, l).toMatch(/^ *\d+ {2}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}[A-Za-z]+ {2}\S+ {2}\S+ {2}\S/);
      expect(l).not.toContain("{");
      expect(l.length, l).toBeLessThan(400);
    }
    expect(tail.out()).toContain("WorkflowDeclared  workflow-nightly");
    expect(tail.out()).toMatch(
      /AttemptFailed .*attempt 1 failed: exited with code 3; last line of stderr: no such table: orders/,
    );
    tail.child.kill("SIGINT");
    up.kill("SIGTERM");
    await new Promise((r) => up.once("exit", r));
  }, 90_000);

  it("history says why an attempt failed and which fields a declaration changed; --json the events", () => {
    writeFileSync(file, declaration("echo fixed"));
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    expect(chronolog(dir, ["pause", "p/a/bad", "--reason", "waiting for the fix"]).code).toBe(0);
    const r = chronolog(dir, ["history", "p/a/bad"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\n");
    const line = (type: string) => lines.find((l) => l.includes(`  ${type}  `)) ?? "";
    expect(line("TaskDeclared")).toMatch(
      /p\/a\/bad\/ALL declared: 0 \* \* \* \* UTC, shell in workflow nightly/,
    );
    expect(line("AttemptFailed")).toContain(
      "attempt 1 failed: exited with code 3; last line of stderr: no such table: orders",
    );
    expect(line("TaskDeclarationChanged")).toContain(
      'p/a/bad/ALL changed operator.command: "echo loading >&2; echo no such table: orders >&2; exit 3" -> "echo fixed"',
    );
    expect(line("TaskPaused")).toMatch(/cli:\S+ {2}p\/a\/bad\/ALL paused: waiting for the fix$/);
    expect(line("IntervalFailed")).toContain("failed: ");
    // The same events, raw, with --json; log read prints the same lines as history.
    const json = chronolog(dir, ["history", "p/a/bad", "--json"]).stdout.trim().split("\n");
    expect(json).toHaveLength(lines.length);
    expect(JSON.parse(json[0] as string)).toMatchObject({
      type: "TaskDeclared",
      streamId: "task-p/a/bad/ALL",
    });
    const read = chronolog(dir, ["log", "read", "-n", "100000"]).stdout;
    for (const l of lines) expect(read).toContain(l);
  });

  it("log tail --json keeps its standard output to the events, one JSON object a line", async () => {
    const tail = running(dir, ["log", "tail", "--from", "0", "--json"]);
    const events = await waitUntil("the tail to print the first events", () => {
      const done = tail.out().split("\n").slice(0, -1);
      return done.length >= 5 ? done : undefined;
    });
    expect(tail.err()).toMatch(
      /^following the log from position 0 \(the head is at \d+; Ctrl-C to stop\)\n$/,
    );
    expect(events.map((l) => (JSON.parse(l) as { position: string }).position).slice(0, 5)).toEqual([
      "0",
      "1",
      "2",
      "3",
      "4",
    ]);
    tail.child.kill("SIGINT");
  });
});
