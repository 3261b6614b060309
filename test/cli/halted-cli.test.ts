import { type ChildProcess, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";

/**
 * The ways out of a halted interval, from the CLI: `why` names the command that applies where
 * the interval stands, and each one, run as printed, works there: `retry` (any task, in a
 * workflow or not, with a fresh retry budget), `mark --succeeded|--skipped` (the children go
 * on, the run says it was marked), `attempt abandon` (an attempt in flight), `resume` (a paused
 * task). Refusals write nothing.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

const dir = tempDataDir("halted");
left.dirs.push(dir);
const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
const id = (name: string) => `p/a/${name}/ALL`;
/** The one interval of a daily task: 05:00 two days back (ended a day ago). */
const dailyAt = new Date(
  Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR - 2 * 24 * HOUR + 5 * HOUR,
).toISOString();
/** A command that fails until the file `ok-<name>` exists. */
const untilFile = (name: string) => `test -e ${dir}/ok-${name} || { echo "no ok-${name} yet" >&2; exit 3; }`;
const task = (name: string, extra: string, command: string) =>
  `  - { project: p, account: a, name: ${name}, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", ${extra}operator: { type: shell, command: ${JSON.stringify(command)} } }`;

let up: ChildProcess;

beforeAll(() => {
  writeFileSync(
    join(dir, "tasks.yaml"),
    [
      "workflows:",
      `  - name: books`,
      "    project: p",
      "    account: a",
      `    cron: "0 * * * *"`,
      `    startDate: "${latest}"`,
      `    endDate: "${end}"`,
      "    tasks:",
      `      - { name: load, operator: { type: shell, command: ${JSON.stringify(untilFile("load"))} } }`,
      `      - { name: sum, parents: [load], operator: { type: shell, command: "true" } }`,
      `      - { name: report, parents: [sum], operator: { type: shell, command: "true" } }`,
      "tasks:",
      task("solo", "retry: { maxAttempts: 2, initialDelayMs: 10 }, ", untilFile("solo")),
      // (A long lease: its heartbeats, whose answers would stop it too, come minutes apart.)
      task("slow", "leaseSeconds: 900, ", `until [ -e ${dir}/ok-slow ]; do sleep 0.2; done`),
      task("paused", "", "true"),
      `  - { project: p, account: a, name: daily, cron: "0 5 * * *", startDate: "${dailyAt}", endDate: "${new Date(Date.parse(dailyAt) + HOUR).toISOString()}", retry: { maxAttempts: 1 }, operator: { type: shell, command: "exit 3" } }`,
      "",
    ].join("\n"),
  );
  const declared = chronolog(dir, ["declare", join(dir, "tasks.yaml")]);
  expect(declared.code, declared.stderr).toBe(0);
  expect(chronolog(dir, ["pause", id("paused"), "--reason", "waiting for the vendor"]).code).toBe(0);
  up = chronologSpawn(dir, ["up", "--http", "off", "--workers", "2", "--grace", "1"]);
  left.processes.push(up);
  up.stdout?.resume();
  up.stderr?.resume();
});

interface Why {
  condition: string;
  reasons: string[];
  nextSteps: Array<{ action: string; task: string; interval: string | null; command: string }>;
}
const why = (name: string) => JSON.parse(chronolog(dir, ["why", id(name), "--json"]).stdout) as Why;
const attempts = (name: string) =>
  JSON.parse(chronolog(dir, ["attempts", id(name), "--json"]).stdout || "[]") as Array<{
    attempt: number;
    status: string;
  }>;
const condition = (name: string, wanted: string) => (why(name).condition === wanted ? true : undefined);

/** Splits a printed command as a shell would (double quotes only), dropping the leading `chronolog`. */
function argv(command: string): string[] {
  const words = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? "");
  expect(words[0]).toBe("chronolog");
  return words.slice(1);
}
/** Runs a command as `why` printed it. */
const runPrinted = (command: string): CliResult => chronolog(dir, argv(command));

/**
 * How many events the CLI has written (the scheduler, running beside it, writes its own): a
 * refusal leaves the count where it was.
 */
function head(): number {
  const lines = chronolog(dir, ["log", "read", "--json", "--limit", "1000000"]).stdout.trim().split("\n");
  return lines.filter((l) =>
    (JSON.parse(l) as { metadata: { actor?: string } }).metadata.actor?.startsWith("cli:"),
  ).length;
}

describe("the ways out of a halted interval, from the CLI", { timeout: 180_000 }, () => {
  it("a failed task outside a workflow: the issue's dead ends now name retry, which works as printed", async () => {
    await waitUntil("solo to fail its two attempts", () => condition("solo", "failed"), 60_000);
    expect(attempts("solo").map((a) => a.status)).toEqual(["failed", "failed"]);
    const w = why("solo");
    expect(w.reasons[0]).toContain("retry it, or mark it succeeded or skipped");
    expect(w.nextSteps.map((s) => s.command)).toEqual([
      `chronolog retry ${id("solo")} --interval ${latest}`,
      `chronolog mark ${id("solo")} --interval ${latest} --succeeded --reason "say why"`,
      `chronolog mark ${id("solo")} --interval ${latest} --skipped --reason "say why"`,
    ]);
    const text = chronolog(dir, ["why", id("solo")]).stdout;
    expect(text).toContain(`next steps:\n  chronolog retry ${id("solo")} --interval ${latest}\n`);

    // What the issue tried: both still refuse, each naming the command that works, and write nothing.
    const before = head();
    const abandon = chronolog(dir, ["attempt", "abandon", id("solo"), "--interval", latest]);
    expect(abandon.code).toBe(8);
    expect(abandon.stderr).toContain(
      `has already ended (failed): retry it with chronolog retry ${id("solo")} --interval ${latest}, or mark it with chronolog mark`,
    );
    const rerun = chronolog(dir, ["rerun", id("solo")]);
    expect(rerun.code).toBe(2);
    expect(rerun.stderr).toContain(
      `to run one interval of a task again: chronolog retry ${id("solo")} --interval DATE`,
    );
    expect(head()).toBe(before);

    // The retry as printed: two more attempts, a fresh budget of two (maxAttempts).
    const retried = runPrinted(w.nextSteps[0]?.command ?? "");
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(
      `retried ${id("solo")} ${latest} (was failed): attempt 3 will be dispatched once its parents are done, with a fresh retry budget of 2 attempts (maxAttempts); nothing else is reset`,
    );
    await waitUntil("the fresh budget to be spent", () =>
      attempts("solo").length === 4 && condition("solo", "failed") ? true : undefined,
    );
    expect(attempts("solo").map((a) => a.status)).toEqual(["failed", "failed", "failed", "failed"]);

    // Made able to succeed, retried once more: it succeeds and the task moves on.
    writeFileSync(join(dir, "ok-solo"), "");
    expect(runPrinted(why("solo").nextSteps[0]?.command ?? "").code).toBe(0);
    await waitUntil("solo to succeed", () =>
      attempts("solo").at(-1)?.status === "success" ? true : undefined,
    );
    await waitUntil("solo to move on", () => (why("solo").condition !== "succeeded" ? true : undefined));
    const history = chronolog(dir, ["history", id("solo")]).stdout;
    expect(history).toMatch(
      /IntervalRetried {2}task-\S+ {2}cli:\S+ {2}\S+ \S+ retried by cli:\S+, with a fresh retry budget/,
    );
  });

  it("a failed task of a workflow: marked skipped as printed, its children go on and the run says it was marked", async () => {
    await waitUntil("load to fail", () => condition("load", "failed"), 60_000);
    const runId = `books@${latest}`;
    await waitUntil("the run to finish failed", () => {
      const r = JSON.parse(chronolog(dir, ["run", runId, "--json"]).stdout || "{}");
      return r.run?.status === "failed" ? r : undefined;
    });
    const sum = why("sum");
    expect(sum.condition).toBe("upstream_failed");
    // Closed for its parent: the parent's ways out come first (a retry of sum alone is refused).
    expect(sum.nextSteps[0]?.command).toBe(`chronolog retry ${id("load")} --interval ${latest}`);
    expect(sum.nextSteps.filter((s) => s.task === id("sum")).map((s) => s.action)).toEqual([
      "mark_succeeded",
      "mark_skipped",
    ]);
    // runs and run ID name the commands, exactly.
    const runs = chronolog(dir, ["runs"]).stdout;
    expect(runs).toContain(
      `${id("load")} halted: chronolog retry ${id("load")} --interval ${latest}, or chronolog mark`,
    );
    const run = chronolog(dir, ["run", runId]).stdout;
    expect(run).toContain(`next: ${id("load")} halted: chronolog retry ${id("load")} --interval ${latest}`);
    const steps = JSON.parse(chronolog(dir, ["run", runId, "--json"]).stdout).nextSteps as Why["nextSteps"];
    const skip = steps.find((s) => s.action === "mark_skipped");
    expect(skip?.command).toBe(
      `chronolog mark ${id("load")} --interval ${latest} --skipped --reason "say why"`,
    );

    const marked = runPrinted(skip?.command ?? "");
    expect(marked.code, marked.stderr).toBe(0);
    expect(marked.stdout).toContain(`marked ${id("load")} ${latest} skipped (was failed): say why`);
    expect(marked.stdout).toContain(
      `reopened 2 descendants closed as upstream_failed for it: ${id("sum")}, ${id("report")}; reopened run ${runId} (try 2)`,
    );
    const finished = await waitUntil("the run to finish again", () => {
      const r = JSON.parse(chronolog(dir, ["run", runId, "--json"]).stdout || "{}");
      return r.run?.status !== "running" && r.run?.try === 2 ? r : undefined;
    });
    expect(finished.run.status).toBe("partial");
    expect(finished.run.outcomes).toEqual({
      [id("load")]: "skipped",
      [id("sum")]: "success",
      [id("report")]: "success",
    });
    expect(finished.run.marked).toEqual({ [id("load")]: "skipped" });
    const shown = chronolog(dir, ["run", runId]).stdout;
    expect(shown).toMatch(new RegExp(`${id("load")}\\s+skipped \\(marked\\)`));
    const tries = chronolog(dir, ["log", "read", `run-${runId}`, "--json"]).stdout;
    expect(tries).toContain('"marked":["p/a/load/ALL"]');
    // task and history say who marked it and why.
    expect(chronolog(dir, ["task", id("load")]).stdout).toMatch(
      /marked {6}\S+ skipped by cli:\S+ at \S+: say why/,
    );
    expect(chronolog(dir, ["history", id("load")]).stdout).toMatch(
      /IntervalMarked {2}instance-\S+ {2}cli:\S+ {2}\S+ \S+ marked skipped by cli:\S+: say why/,
    );
  });

  it("a running attempt is abandoned; then the interval is marked succeeded as printed", async () => {
    await waitUntil("slow to run", () => condition("slow", "running"), 60_000);
    const before = head();
    const refused = chronolog(dir, ["retry", id("slow"), "--interval", latest]);
    expect(refused.code).toBe(8);
    expect(refused.stderr).toContain(
      `is running (attempt 1): wait for it, or abandon it first with chronolog attempt abandon ${id("slow")} --interval ${latest}`,
    );
    expect(head()).toBe(before);
    // Its shell, found by its command line (it runs as another user: no pid file of its own).
    const slowShells = () => {
      const r = spawnSync("pgrep", ["-f", `${dir}/ok-slow ]`], { encoding: "utf8" });
      return r.stdout.trim().split("\n").filter(Boolean);
    };
    expect(slowShells()).not.toEqual([]);
    const abandoned = chronolog(dir, ["attempt", "abandon", id("slow"), "--interval", latest]);
    expect(abandoned.code, abandoned.stderr).toBe(0);
    // Abandoned, it is stopped where it runs: it will not finish its work after all.
    await waitUntil(
      "the abandoned attempt's shell to be killed",
      () => (slowShells().length === 0 ? true : undefined),
      30_000,
    );
    writeFileSync(join(dir, "ok-slow"), "");
    await waitUntil("slow to halt", () => condition("slow", "failed"));
    // How it ended, its state said once (not "ended abandoned: abandoned: abandoned by ...").
    const said = why("slow").reasons.find((r) => r.includes(" ended abandoned"));
    expect(said).toMatch(/ ended abandoned: abandoned by an operator$/);
    // Who abandoned it is named as the log names the command's other writes.
    expect(chronolog(dir, ["history", id("slow")]).stdout).toMatch(/attempt \d+ abandoned by cli:\S+@/);
    const succeed = why("slow").nextSteps.find((s) => s.action === "mark_succeeded");
    const marked = runPrinted(succeed?.command ?? "");
    expect(marked.code, marked.stderr).toBe(0);
    await waitUntil("slow to move past the interval", () =>
      JSON.parse(chronolog(dir, ["task", id("slow"), "--json"]).stdout).task.prevIntervalStart === latest
        ? true
        : undefined,
    );
  });

  it("a paused task names resume, which works as printed", () => {
    const w = why("paused");
    expect(w.condition).toBe("paused");
    expect(w.nextSteps.map((s) => s.command)).toEqual([`chronolog resume ${id("paused")}`]);
    const r = runPrinted(w.nextSteps[0]?.command ?? "");
    expect(r.code, r.stderr).toBe(0);
  });

  it("takes a day for --interval: the one interval that starts on it", async () => {
    await waitUntil("daily to fail", () => condition("daily", "failed"), 60_000);
    const day = dailyAt.slice(0, 10);
    const retried = chronolog(dir, ["retry", id("daily"), "--interval", day]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`retried ${id("daily")} ${dailyAt} (was failed)`);
    await waitUntil("the retry to fail", () =>
      attempts("daily").length === 2 && condition("daily", "failed") ? true : undefined,
    );
    const marked = chronolog(dir, [
      "mark",
      id("daily"),
      "--interval",
      day,
      "--skipped",
      "--reason",
      "no data",
    ]);
    expect(marked.code, marked.stderr).toBe(0);
    expect(marked.stdout).toContain(dailyAt);
    // A day before an hourly task began holds none of its intervals: it says its first. (A day
    // holding several needs the time: see dates-cli.)
    const before = new Date(Date.parse(latest) - 24 * HOUR).toISOString().slice(0, 10);
    const none = chronolog(dir, ["retry", id("solo"), "--interval", before]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      `no interval of ${id("solo")} starts on ${before} in its zone (0 * * * * (UTC)); the next starts ${latest.replace(":00.000Z", "Z")}`,
    );
  });

  it("refuses what cannot be done, specifically, and writes nothing", () => {
    const before = head();
    const future = new Date(Date.parse(latest) + 5 * HOUR).toISOString();
    const cases: Array<[string[], number, string]> = [
      [["retry", id("nope"), "--interval", latest], 4, "no task p/a/nope/ALL is declared"],
      [
        ["mark", id("load"), "--interval", latest, "--succeeded", "--reason", "x"],
        8,
        "is already done (marked skipped by cli:",
      ],
      [["mark", id("solo"), "--interval", future, "--skipped", "--reason", "x"], 8, "is not due yet"],
      [
        ["mark", id("solo"), "--interval", latest, "--skipped"],
        2,
        "--reason: say why the interval is marked",
      ],
      [
        ["mark", id("solo"), "--interval", latest, "--reason", "x"],
        2,
        "give one of --succeeded or --skipped",
      ],
      [
        ["retry", id("solo"), "--interval", new Date(Date.parse(latest) + 60_000).toISOString()],
        2,
        `chronolog: validation: --interval: ${new Date(Date.parse(latest) + 60_000).toISOString()} is not an interval of p/a/solo/ALL (0 * * * *, UTC); the nearest are`,
      ],
      [
        ["retry", id("solo"), "--interval", new Date(Date.parse(latest) - 60_000).toISOString()],
        2,
        `is not an interval of p/a/solo/ALL (0 * * * *, UTC); it is before the task's start date ${latest}; its first interval is ${latest}`,
      ],
    ];
    for (const [args, code, message] of cases) {
      const r = chronolog(dir, args);
      expect(r.stderr, args.join(" ")).toContain(message);
      expect(r.code, args.join(" ")).toBe(code);
    }
    expect(chronolog(dir, ["retire", id("paused")]).code).toBe(0);
    const afterRetire = head();
    const retired = chronolog(dir, ["retry", id("paused"), "--interval", latest]);
    expect(retired.code).toBe(8);
    expect(retired.stderr).toContain("is retired: its intervals cannot be retried or marked");
    expect(head()).toBe(afterRetire);
    expect(afterRetire).toBe(before + 1);
  });
});

/** The worker processes `chronolog up` forked. */
function workerPids(pid: number): number[] {
  const f = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(f)) return [];
  return readFileSync(f, "utf8").split(/\s+/).filter(Boolean).map(Number);
}

describe("an attempt whose worker went silent", { timeout: 120_000 }, () => {
  const stopped: number[] = [];
  afterAll(() => {
    for (const pid of stopped) {
      try {
        signalProcess(pid, "SIGCONT");
      } catch {
        // already gone
      }
    }
  });

  it("why names attempt abandon --retry, which works as printed", async () => {
    const silent = tempDataDir("halted-lease");
    left.dirs.push(silent);
    writeFileSync(
      join(silent, "t.yaml"),
      `tasks:\n  - { project: p, account: a, name: once, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: false, leaseSeconds: 1, operator: { type: shell, command: "sleep 600" } }\n`,
    );
    expect(chronolog(silent, ["declare", join(silent, "t.yaml")]).code).toBe(0);
    const p = chronologSpawn(silent, [
      "up",
      "--http",
      "off",
      "--workers",
      "1",
      "--reconcile-ms",
      "200",
      "--grace",
      "1",
    ]);
    left.processes.push(p);
    p.stdout?.resume();
    p.stderr?.resume();
    const whyOnce = () => JSON.parse(chronolog(silent, ["why", id("once"), "--json"]).stdout) as Why;
    await waitUntil("the attempt to run", () => (whyOnce().condition === "running" ? true : undefined));
    // Its worker stops answering: the lease runs out and, the task not being idempotent, waits for an operator.
    for (const pid of workerPids(p.pid as number)) {
      signalProcess(pid, "SIGSTOP");
      stopped.push(pid);
    }
    const w = await waitUntil("the lease to expire", () => {
      const x = whyOnce();
      return x.nextSteps.length > 0 ? x : undefined;
    });
    expect(w.reasons[0]).toContain("its lease expired");
    expect(w.nextSteps.map((s) => s.command)).toEqual([
      `chronolog attempt abandon ${id("once")} --interval ${latest} --retry`,
    ]);
    const r = chronolog(silent, argv(w.nextSteps[0]?.command ?? ""));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `${id("once")} ${latest}: attempt 1 abandoned; a new attempt will be dispatched`,
    );
    await waitUntil("attempt 2", () => {
      const a = JSON.parse(chronolog(silent, ["attempts", id("once"), "--json"]).stdout) as Array<{
        attempt: number;
        status: string;
      }>;
      return a.length === 2 ? a : undefined;
    });
  });
});
