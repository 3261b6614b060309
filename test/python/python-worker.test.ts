import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RecordedEvent } from "@chronolog/log";
import { afterAll, describe, expect, it } from "vitest";
import {
  completed,
  freePort,
  LATEST_HOUR,
  of,
  readLog,
  startScheduler,
  workToken,
} from "../remote/support.js";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";
import { declarePython, startPythonWorker } from "./support.js";

/** The file's whole lines (one being written is left out until its newline). */
const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(0, -1).filter(Boolean) : [];

type Data = Record<string, unknown> & {
  attempt?: number;
  error?: { kind: string; message: string };
  output?: { stdoutTail: string; stderrTail: string };
};
const data = (e: RecordedEvent | undefined) => (e?.data ?? {}) as Data;

/** Waits until each named task's interval has ended, completed or failed for good. */
function ended(dir: string, names: readonly string[], timeoutMs = 90_000): Promise<RecordedEvent[]> {
  return waitUntil(
    `${names.join(", ")} to end`,
    async () => {
      const events = await readLog(dir);
      const done = names.every((n) =>
        events.some(
          (e) =>
            (e.type === "IntervalCompleted" || e.type === "IntervalFailed") &&
            e.streamId === `task-p/a/${n}/ALL`,
        ),
      );
      return done ? events : undefined;
    },
    timeoutMs,
    250,
  );
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * The Python worker (`python3 -m chronolog.worker`), black-box: a real scheduler with its API on
 * a loopback port, a work token, python tasks whose functions (clients/python/tests/worker_tasks.py)
 * write to files the tests read.
 */
describe("the Python worker", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("runs python functions: success, failure (why and logs), retry, an attempt's process killed", async () => {
    const dir = tempDataDir("pyworker-basics");
    left.dirs.push(dir, `${dir}-tasks`);
    const marker = join(dir, "marker");
    const flaky = join(dir, "flaky");
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    declarePython(dir, [
      { name: "ok", fn: "ok", args: { marker, region: "us" } },
      { name: "boom", fn: "boom" },
      { name: "flaky", fn: "flaky", args: { marker: flaky }, maxAttempts: 2 },
      { name: "killme", fn: "slow", args: { starts, ends, seconds: 60 } },
    ]);
    const token = workToken(dir, "pw", ["py"]);
    const s = await startScheduler(left, dir, await freePort());
    const w = startPythonWorker(left, s.url, token, ["py"], "pw-1", ["--capacity", "4"]);
    const [started] = await waitUntil("the slow function to start", () =>
      lines(starts).length === 1 ? lines(starts) : undefined,
    );
    const [pid, grandchild] = (started as string).split(" ").map(Number) as [number, number];
    expect(pid).not.toBe(w.child.pid);
    signalProcess(pid, "SIGKILL");
    const events = await ended(dir, ["ok", "boom", "flaky", "killme"]).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}`);
    });

    // Success: the function got its context, its output is the attempt's.
    expect(of(events, "ok").filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
    const ctx = JSON.parse(lines(marker)[0] as string);
    expect(ctx).toMatchObject({
      task: "p/a/ok/ALL",
      logical_date: LATEST_HOUR,
      data_interval_start: LATEST_HOUR,
      data_interval_end: new Date(Date.parse(LATEST_HOUR) + 3_600_000).toISOString(),
      attempt: 1,
      args: { marker, region: "us" },
      region: "us",
      params: {},
    });
    const okLogs = chronolog(dir, ["logs", "p/a/ok/ALL"]);
    expect(okLogs.stdout).toContain("hello from ok, region us");
    expect(okLogs.stdout).toContain(`attempt 1 of ${LATEST_HOUR}`);

    // Failure: the traceback's last line is the error, the whole traceback is in the output.
    const failed = of(events, "boom").find((e) => e.type === "AttemptFailed");
    expect(data(failed).error).toEqual({
      kind: "exception",
      message: "ValueError: the orders file is empty",
    });
    expect(chronolog(dir, ["why", "p/a/boom/ALL"]).stdout).toContain("ValueError: the orders file is empty");
    const logs = chronolog(dir, ["logs", "p/a/boom/ALL"]).stdout;
    expect(logs).toContain("reading the orders file");
    expect(logs).toContain("about to fail");
    expect(logs).toContain("Traceback (most recent call last):");
    expect(logs).toMatch(/in _inner\n\s+raise ValueError/);
    expect(logs.trimEnd().endsWith("ValueError: the orders file is empty")).toBe(true);
    // Its stdout and stderr kept apart, as a Node worker's: interleaved in the output file as they
    // came, each its own tail in the attempt's end (the last line of stderr is in why).
    expect(logs.indexOf("reading the orders file")).toBeLessThan(logs.indexOf("about to fail"));
    expect(data(failed).output?.stdoutTail).toBe("reading the orders file\n");
    expect(data(failed).output?.stderrTail).toMatch(/^about to fail\nTraceback \(most recent call last\):\n/);
    expect(chronolog(dir, ["why", "p/a/boom/ALL"]).stdout).toContain(
      "last line of stderr: ValueError: the orders file is empty",
    );
    const okEnd = of(events, "ok").find((e) => e.type === "AttemptSucceeded");
    expect(data(okEnd).output?.stdoutTail).toBe(`hello from ok, region us\nattempt 1 of ${LATEST_HOUR}\n`);
    expect(data(okEnd).output?.stderrTail).toBe("");
    // No timeout declared: no deadline.
    expect(ctx.deadline).toBeNull();

    // Retry: the first attempt failed, the second succeeded.
    expect(lines(flaky)).toEqual(["1", "2"]);
    const fl = of(events, "flaky");
    expect(data(fl.find((e) => e.type === "AttemptFailed")).error?.message).toBe(
      "RuntimeError: the first attempt fails",
    );
    expect(data(fl.find((e) => e.type === "AttemptSucceeded")).attempt).toBe(2);

    // The attempt's process killed: that attempt failed, the worker lives on.
    const killed = of(events, "killme").find((e) => e.type === "AttemptFailed");
    expect(data(killed).error?.kind).toBe("signal");
    expect(data(killed).error?.message).toContain("SIGKILL");
    expect(lines(ends)).toEqual([]);
    expect(w.child.exitCode).toBeNull();
    expect(w.output).not.toContain("Traceback");
    // Its own child, in its process group, went with the attempt's end.
    await waitUntil("the killed attempt's subprocess to be gone", () =>
      alive(grandchild) ? undefined : true,
    );
  }, 180_000);

  it("resolves a task's secrets on the worker, masked in all it writes; a deadline; a timeout; the output limit", async () => {
    const dir = tempDataDir("pyworker-secrets");
    left.dirs.push(dir, `${dir}-tasks`);
    const password = "s3cr3t-Pa55word";
    const secretFile = join(dir, "db_password");
    writeFileSync(secretFile, `${password}\n`, { mode: 0o600 });
    const marker = join(dir, "marker");
    const deadlines = join(dir, "deadlines");
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    declarePython(
      dir,
      [
        { name: "secret", fn: "uses_secret", args: { marker }, fields: "connection: db" },
        {
          name: "nosecret",
          fn: "uses_secret",
          args: { marker },
          fields: "secrets: { DB_PASSWORD: { env: PYW_TEST_NOT_SET } }",
        },
        { name: "deadline", fn: "deadline", args: { marker: deadlines }, timeoutMs: 600_000 },
        { name: "timeout", fn: "slow", args: { starts, ends, seconds: 60 }, timeoutMs: 1500 },
        { name: "loud", fn: "loud", args: { lines: 20_000 } },
      ],
      `connections:\n  - { name: db, secrets: { DB_PASSWORD: { file: ${JSON.stringify(secretFile)} } } }\n`,
    );
    const token = workToken(dir, "ps", ["py"]);
    const s = await startScheduler(left, dir, await freePort(), "127.0.0.1", ["--output-max-bytes", "64KiB"]);
    const w = startPythonWorker(left, s.url, token, ["py"], "ps-1");
    const events = await ended(dir, ["secret", "nosecret", "deadline", "timeout", "loud"]).catch(
      (error: Error) => {
        throw new Error(`${error.message}\nworker:\n${w.output}`);
      },
    );

    // The function got its connection's secret, resolved by the worker that ran it.
    expect(lines(marker).map((l) => JSON.parse(l))).toEqual([
      { environ: password, secrets: { DB_PASSWORD: password }, env: password },
    ]);
    // Masked wherever the attempt's output and end went: as is, base64, from a subprocess too.
    const b64 = Buffer.from(password).toString("base64");
    const failed = of(events, "secret").find((e) => e.type === "AttemptFailed");
    expect(data(failed).error).toEqual({
      kind: "exception",
      message: "RuntimeError: the database refused ***",
    });
    expect(data(failed).output?.stdoutTail).toBe("connecting with ***\na subprocess says ***\n");
    expect(data(failed).output?.stderrTail).toMatch(/^as base64 \*\*\*\nTraceback/);
    const logs = chronolog(dir, ["logs", "p/a/secret/ALL"]).stdout;
    expect(logs).toContain("connecting with ***");
    expect(logs).toContain("as base64 ***");
    expect(logs).toContain("a subprocess says ***");
    expect(chronolog(dir, ["why", "p/a/secret/ALL"]).stdout).toContain(
      "RuntimeError: the database refused ***",
    );
    const everything = [
      JSON.stringify(events.map((e) => e.data)),
      logs,
      ...readdirSync(join(w.dir, "w", "output")).map((f) =>
        readFileSync(join(w.dir, "w", "output", f), "utf8"),
      ),
      ...readdirSync(join(dir, "output")).map((f) => readFileSync(join(dir, "output", f), "utf8")),
    ].join("\n");
    expect(everything).not.toContain(password);
    expect(everything).not.toContain(b64);

    // A secret that cannot be resolved fails the attempt unrun, naming it and its source.
    const reason =
      "secret DB_PASSWORD (environment variable PYW_TEST_NOT_SET): the variable is not set on this worker";
    expect(data(of(events, "nosecret").find((e) => e.type === "AttemptFailed")).error).toEqual({
      kind: "exception",
      message: reason,
    });
    expect(chronolog(dir, ["why", "p/a/nosecret/ALL"]).stdout).toContain(reason);

    // The deadline: the attempt's start plus its timeoutMs, an aware datetime in UTC.
    const [d] = lines(deadlines).map((l) => JSON.parse(l));
    expect(d.aware).toBe(true);
    expect(d.deadline).toMatch(/\+00:00$/);
    const left_ = Date.parse(d.deadline) - d.entered * 1000;
    expect(left_).toBeGreaterThan(0);
    expect(left_).toBeLessThanOrEqual(600_000);
    expect(d.remaining * 1000).toBeLessThanOrEqual(600_000);

    // Past its deadline the function is interrupted (Cancelled), its process group killed, the
    // attempt failed as a timeout.
    expect(data(of(events, "timeout").find((e) => e.type === "AttemptFailed")).error).toEqual({
      kind: "timeout",
      message: "timed out after 1500 ms",
    });
    expect(lines(`${starts}.cancelled`)).toHaveLength(1);
    expect(lines(ends)).toEqual([]);
    const grandchild = Number((lines(starts)[0] as string).split(" ")[1]);
    await waitUntil("the timed-out attempt's subprocess to be gone", () =>
      alive(grandchild) ? undefined : true,
    );

    // Output past the scheduler's limit (64 KiB here): its first half as it came, a line saying
    // how much was cut, its last half; the file the scheduler keeps is the one the end records.
    const loud = of(events, "loud").find((e) => e.type === "AttemptSucceeded");
    type File = { path: string; bytes: number; cutBytes: number; sha256: string };
    const file = ((loud?.data ?? {}) as { output?: { file?: File } }).output?.file;
    const full = Array.from({ length: 20_000 }, (_, i) => `line ${i}\n`).join("");
    const kept = readFileSync(file?.path as string, "utf8");
    const half = 32 * 1024;
    const cut = Buffer.byteLength(full) - 2 * half;
    expect(file?.cutBytes).toBe(cut);
    expect(kept).toBe(`${full.slice(0, half)}\n[... ${cut} bytes cut ...]\n${full.slice(-half)}`);
    expect(file?.bytes).toBe(Buffer.byteLength(kept));
    expect(file?.sha256).toBe(createHash("sha256").update(kept).digest("hex"));
    expect(w.child.exitCode).toBeNull();
  }, 180_000);

  it("cancels a running function (a workflow failing fast): Cancelled raised, its process group killed", async () => {
    const dir = tempDataDir("pyworker-cancel");
    left.dirs.push(dir, `${dir}-tasks`);
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    const marker = join(dir, "marker");
    const extra = [
      "workflows:",
      "  - name: pyflow",
      "    project: p",
      "    account: a",
      '    cron: "0 * * * *"',
      `    startDate: "${LATEST_HOUR}"`,
      "    catchup: false",
      "    failurePolicy: fail_fast",
      "    config: { region: eu }",
      "    params: { mode: full }",
      "    tasks:",
      `      - { name: ctx, queue: py, operator: { type: python, function: "tests.worker_tasks:ok", args: { marker: ${JSON.stringify(marker)}, region: "{{ config.region }}" } } }`,
      `      - { name: long, queue: py, operator: { type: python, function: "tests.worker_tasks:slow", args: { starts: ${JSON.stringify(starts)}, ends: ${JSON.stringify(ends)}, seconds: 60 } } }`,
      `      - { name: fails, queue: py, parents: [ctx], operator: { type: python, function: "tests.worker_tasks:fail_after", args: { wait_for: ${JSON.stringify(starts)} } } }`,
      "",
    ].join("\n");
    declarePython(dir, [], extra);
    const token = workToken(dir, "pc", ["py"]);
    const s = await startScheduler(left, dir, await freePort());
    const w = startPythonWorker(left, s.url, token, ["py"], "pc-1");
    const events = await waitUntil(
      "the run to finish",
      async () => {
        const ev = await readLog(dir);
        return ev.some((e) => e.type === "RunFinished") ? ev : undefined;
      },
      90_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}`);
    });
    const long = events.filter((e) => e.streamId.startsWith("instance-p/a/long/"));
    expect(long.some((e) => e.type === "AttemptCancelled")).toBe(true);
    // The function saw it: Cancelled raised in it, its flag set; it never reached its end.
    await waitUntil("the function to see its cancellation", () =>
      lines(`${starts}.cancelled`).length === 1 ? true : undefined,
    );
    expect(lines(`${starts}.cancelled`)[0]).toContain("cancelled=True");
    expect(lines(ends)).toEqual([]);
    const grandchild = Number((lines(starts)[0] as string).split(" ")[1]);
    await waitUntil("the cancelled attempt's subprocess to be gone", () =>
      alive(grandchild) ? undefined : true,
    );
    // The workflow's config and params reached the context.
    expect(JSON.parse(lines(marker)[0] as string)).toMatchObject({
      region: "eu",
      config: { region: "eu" },
      params: { mode: "full" },
    });
    expect(w.child.exitCode).toBeNull();
  }, 180_000);

  it("retries the attempt of a Python worker SIGKILLed mid-attempt once its lease runs out", async () => {
    const dir = tempDataDir("pyworker-kill");
    left.dirs.push(dir, `${dir}-tasks`);
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    declarePython(dir, [{ name: "tk", fn: "slow", leaseSeconds: 3, args: { starts, ends, seconds: 5 } }]);
    const token = workToken(dir, "pk", ["py"]);
    const s = await startScheduler(left, dir, await freePort());
    const first = startPythonWorker(left, s.url, token, ["py"], "pk-1");
    await waitUntil("the attempt to start on the worker", () =>
      lines(starts).length === 1 ? true : undefined,
    );
    // Its start on record (a start still on its way when the worker dies leaves an intent never
    // confirmed, abandoned rather than expired): then it is killed mid-attempt.
    await waitUntil("the attempt's start to be recorded", async () =>
      of(await readLog(dir), "tk").some((e) => e.type === "AttemptStarted") ? true : undefined,
    );
    first.child.kill("SIGKILL");
    await first.exited;
    const second = startPythonWorker(left, s.url, token, ["py"], "pk-2");
    const events = await completed(dir, ["tk"]).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${second.output}`);
    });
    const tk = of(events, "tk");
    expect(
      tk.some((e) => e.type === "AttemptHeartbeatExpired"),
      tk.map((e) => e.type).join(", "),
    ).toBe(true);
    const succeeded = tk.filter((e) => e.type === "AttemptSucceeded");
    expect(succeeded).toHaveLength(1);
    expect(data(succeeded[0]).attempt).toBe(2);
    // The killed worker's attempt died with it: one end only, the retry's.
    expect(lines(ends)).toEqual(["2"]);
    expect(lines(starts).map((l) => l.split(" ")[2])).toEqual(["1", "2"]);
    const firstPid = Number((lines(starts)[0] as string).split(" ")[0]);
    expect(alive(firstPid)).toBe(false);
  }, 120_000);

  it("has its attempts adopted after the scheduler is SIGKILLed and restarted: none twice, none lost", async () => {
    const dir = tempDataDir("pyworker-restart");
    left.dirs.push(dir, `${dir}-tasks`);
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    const names = ["s1", "s2", "s3"];
    declarePython(
      dir,
      names.map((name) => ({ name, fn: "slow", leaseSeconds: 30, args: { starts, ends, seconds: 6 } })),
    );
    const token = workToken(dir, "pr", ["py"]);
    const port = await freePort();
    const first = await startScheduler(left, dir, port);
    const w = startPythonWorker(left, first.url, token, ["py"], "pr-1", ["--capacity", "4"]);
    await waitUntil("every attempt to start on the worker, on record", async () => {
      const events = await readLog(dir);
      return names.every((n) => of(events, n).some((e) => e.type === "AttemptStarted")) ? true : undefined;
    });
    first.child.kill("SIGKILL");
    await first.exited;
    const second = await startScheduler(left, dir, port);
    const events = await completed(dir, names).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}\nscheduler:\n${second.output}`);
    });
    expect(lines(starts)).toHaveLength(names.length);
    expect(lines(ends)).toEqual(["1", "1", "1"]);
    for (const n of names) {
      const ev = of(events, n);
      expect(ev.filter((e) => e.type === "DispatchIntended")).toHaveLength(1);
      expect(ev.filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
    }
    const worker = events.filter((e) => e.streamId === "worker-pr-1").map((e) => e.type);
    expect(worker).toEqual(["WorkerConnected", "WorkerDisconnected", "WorkerConnected"]);
    const again = events.filter((e) => e.type === "WorkerConnected").at(-1);
    expect((again?.data as { running: string[] } | undefined)?.running).toHaveLength(names.length);
    expect(w.child.exitCode).toBeNull();
  }, 120_000);
});
