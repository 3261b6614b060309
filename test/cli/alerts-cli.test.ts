import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { readPid, signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";

/**
 * A failure never wedges a workflow silently: the runs and tasks behind a halted task say so,
 * and alerts go to the sinks the declaration names (a command, an HTTP webhook) once per cause,
 * recorded as events, retried, and never in the scheduler's way.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Alert {
  raised: { kind: string; alertId: string };
  sinks: Array<{ delivered: boolean; attempts: number; retryAt: string | null; lastError: string | null }>;
  message: string;
}

function up(dir: string, args: string[] = []): ChildProcess {
  const p = chronologSpawn(dir, ["up", "--workers", "2", "--reconcile-ms", "200", ...args]);
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

function declare(dir: string, yaml: string): void {
  const file = join(dir, "w.yaml");
  writeFileSync(file, yaml);
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
}

const hoursAgo = (n: number) => new Date(Math.floor(Date.now() / HOUR) * HOUR - n * HOUR).toISOString();

describe("a halted workflow and its alerts", () => {
  it("says which failed interval its runs wait for, and alerts once for the halt and the failed run", async () => {
    const dir = tempDataDir("alerts");
    left.dirs.push(dir);
    const file = join(dir, "alerts.txt");
    declare(
      dir,
      `workflows:
  - name: w
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${hoursAgo(4)}"
    maxActiveRuns: 2
    alerts:
      - { command: "echo {{ alert.kind }} {{ alert.message }} \\"[$CHRONOLOG_ALERT_RUN]\\" >> ${file}" }
      - { on: [run_failed], command: "sleep 30", timeoutMs: 300 }
    tasks:
      - { name: a, operator: { type: shell, command: "exit 3" } }
      - { name: b, parents: [a], operator: { type: shell, command: "true" } }
      - { name: c, operator: { type: shell, command: "true" } }
`,
    );
    const first = hoursAgo(4).replace(":00.000Z", "Z");
    let p = up(dir);
    await waitUntil("two alerts delivered", () => (lines(file).length >= 2 ? true : undefined));
    await waitUntil("c held by the runs", () =>
      chronolog(dir, ["why", "p/a/c"]).stdout.includes("they cannot finish") ? true : undefined,
    );
    expect(lines(file).sort()).toEqual([
      `run_failed run w@${hoursAgo(4)} failed: failed: p/a/a/ALL; upstream_failed: p/a/b/ALL [w@${hoursAgo(4)}]`,
      // Each field of the alert is in the command's environment too (a task's alert has no run).
      `task_failed p/a/a/ALL halted at ${hoursAgo(4)}: exited with code 3 []`,
    ]);
    // The runs behind it say what they wait for; so does the task they hold back.
    const runs = JSON.parse(chronolog(dir, ["runs", "--json"]).stdout) as Array<{
      status: string;
      blockedBy: string[];
    }>;
    const going = runs.filter((r) => r.status === "running");
    expect(going).toHaveLength(2);
    for (const r of going)
      expect(r.blockedBy).toContain(
        `blocked by p/a/a/ALL's failed interval ${first}: chronolog retry p/a/a/ALL --interval ${hoursAgo(4)}, or chronolog mark p/a/a/ALL --interval ${hoursAgo(4)} --skipped --reason "say why"`,
      );
    expect(chronolog(dir, ["why", "p/a/c"]).stdout).toContain(
      `(2 of 2 runs going); they cannot finish: blocked by p/a/a/ALL's failed interval ${first}: chronolog retry p/a/a/ALL --interval ${hoursAgo(4)}`,
    );
    // The sink that hangs is cut at its timeout and tried again; the other was delivered at once.
    const runAlert = await waitUntil("the hanging sink's first try to fail", () => {
      const a = alerts(dir).find((x) => x.raised.kind === "run_failed");
      return a && (a.sinks[1]?.attempts ?? 0) >= 1 ? a : undefined;
    });
    expect(runAlert.sinks[0]?.delivered).toBe(true);
    expect(runAlert.sinks[1]?.delivered).toBe(false);
    expect(runAlert.sinks[1]?.lastError).toContain("timed out after 300 ms");
    expect(runAlert.sinks[1]?.retryAt).not.toBeNull();

    // A restart raises nothing again and delivers nothing twice.
    await stop(p);
    p = up(dir);
    await new Promise((r) => setTimeout(r, 2000));
    await stop(p);
    expect(lines(file)).toHaveLength(2);
    expect(alerts(dir)).toHaveLength(2);
    const text = chronolog(dir, ["alerts"]).stdout;
    expect(text).toContain("task_failed  p/a/a/ALL halted at");
    expect(text).toContain("command: delivered");
  }, 60_000);

  it("delivers to an HTTP webhook, retrying a sink that fails, and alerts when an attempt needs an operator", async () => {
    const dir = tempDataDir("alerts-http");
    left.dirs.push(dir);
    const got: Array<{ body: string; auth: string | undefined }> = [];
    const server: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        got.push({ body, auth: req.headers.authorization });
        res.writeHead(got.length <= 2 ? 503 : 200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const pidFile = join(dir, "pid");
    declare(
      dir,
      `tasks:
  - project: p
    account: a
    name: slow
    cron: "0 * * * *"
    startDate: "${hoursAgo(1)}"
    endDate: "${new Date(Date.parse(hoursAgo(1)) + HOUR / 2).toISOString()}"
    leaseSeconds: 1
    alerts:
      - on: [needs_operator]
        http:
          url: "http://127.0.0.1:${port}/hook/{{ alert.kind }}"
          headers: { Authorization: "Bearer s3cret" }
      # Declared (it starts with a tag), refused once rendered: needs_operator://... is no http URL.
      - on: [needs_operator]
        http: { url: "{{ alert.kind }}://127.0.0.1:${port}/other" }
    operator: { type: shell, command: "echo $CHRONOLOG_WORKER_PID > ${pidFile}; sleep 60" }
`,
    );
    const p = up(dir, ["--grace", "0"]);
    try {
      const pid = await waitUntil("the task to start", () => readPid(pidFile));
      // The worker stops answering: its lease runs out, and a task that is not idempotent is left for an operator.
      signalProcess(pid, "SIGSTOP");
      try {
        const alert = await waitUntil(
          "the webhook to take the alert",
          () => {
            const a = alerts(dir)[0];
            return a?.sinks[0]?.delivered ? a : undefined;
          },
          30_000,
        );
        expect(alert.raised.kind).toBe("needs_operator");
        expect(alert.sinks[0]?.attempts).toBe(3);
        expect(got).toHaveLength(3);
        expect(got[2]?.auth).toBe("Bearer s3cret");
        const body = JSON.parse(got[2]?.body ?? "{}");
        expect(body).toMatchObject({ kind: "needs_operator", task: "p/a/slow/ALL" });
        expect(body.message).toContain("needs an operator");
        expect(alert.sinks[1]?.delivered).toBe(false);
        expect(alert.sinks[1]?.lastError).toBe(
          `POST needs_operator://127.0.0.1:${port}/other refused: not an http or https URL`,
        );
        expect(got.every((g) => !g.body.includes("/other"))).toBe(true);
      } finally {
        signalProcess(pid, "SIGCONT");
      }
    } finally {
      await stop(p);
      server.close();
    }
  }, 60_000);

  it("refuses a sink that is not one thing, or whose template does not render, naming it", () => {
    const dir = tempDataDir("alerts-bad");
    left.dirs.push(dir);
    const file = join(dir, "w.yaml");
    const task = (alerts: string) =>
      `tasks:\n  - { project: p, account: a, name: t, cron: "0 * * * *", startDate: "${hoursAgo(1)}", alerts: [${alerts}], operator: { type: noop } }\n`;
    writeFileSync(file, task(`{ command: "true", http: { url: "http://127.0.0.1:1/" } }`));
    const both = chronolog(dir, ["declare", file]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain(
      "tasks[0].alerts[0]: p/a/t/ALL: an alert sink is either a command or an http request",
    );
    writeFileSync(file, task(`{ command: "echo {{ alert.knd }}" }`));
    const typo = chronolog(dir, ["declare", file]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('alerts[0].command: p/a/t/ALL: undefined variable "alert.knd"');
    expect(chronolog(dir, ["tasks", "--json"]).stdout.trim()).toBe("[]");
  });
});
