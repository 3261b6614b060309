import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * An attempt's whole output is kept in a file under the data directory, up to a size (the middle
 * cut out, with a marker saying how much), its size and SHA-256 recorded in the attempt's end;
 * `chronolog logs` prints it, checks it, and follows a running attempt live.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Attempt {
  attempt: number;
  status: string;
  outputPath: string | null;
  outputFile: { path: string; bytes: number; sha256: string; cutBytes: number } | null;
}

function setUp(label: string, tasks: Record<string, { command: string; retries?: number }>): string {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  const lines = Object.entries(tasks).map(
    ([name, t]) =>
      `  - { project: p, account: a, name: ${name}, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", retry: { maxAttempts: ${t.retries ?? 1}, initialDelayMs: 300 }, operator: { type: shell, command: ${JSON.stringify(t.command)} } }`,
  );
  const file = join(dir, "t.yaml");
  writeFileSync(file, `tasks:\n${lines.join("\n")}\n`);
  expect(chronolog(dir, ["declare", file]).code).toBe(0);
  return dir;
}

function up(dir: string, args: string[] = []): ChildProcess {
  const p = chronologSpawn(dir, ["up", "--workers", "1", "--reconcile-ms", "200", ...args]);
  left.processes.push(p);
  // Its service log is not read here, but must not fill the pipe and stall it.
  p.stderr?.resume();
  p.stdout?.resume();
  return p;
}

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode === null && p.signalCode === null) {
    p.kill("SIGTERM");
    await new Promise((r) => p.once("exit", r));
  }
}

const attempts = (dir: string, task: string) =>
  JSON.parse(chronolog(dir, ["attempts", task, "--json"]).stdout || "[]") as Attempt[];

async function settled(dir: string, task: string, count: number): Promise<Attempt[]> {
  return waitUntil(`${task} to end ${count} attempt(s)`, () => {
    const rows = attempts(dir, task);
    return rows.length === count && rows.every((r) => r.status === "success" || r.status === "failed")
      ? rows
      : undefined;
  });
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("chronolog logs", () => {
  it("keeps the output whole up to the limit, cuts the middle with a marker, and records size and SHA-256", async () => {
    const dir = setUp("logs-cut", { chatty: { command: "seq 1 300000" } });
    const p = up(dir, ["--output-max-bytes", "64KiB"]);
    const [a] = await settled(dir, "p/a/chatty", 1);
    await stop(p);
    const full = Buffer.from(`${Array.from({ length: 300_000 }, (_, i) => i + 1).join("\n")}\n`);
    const cut = full.length - 65_536;
    const expected = Buffer.concat([
      full.subarray(0, 32_768),
      Buffer.from(`\n[... ${cut} bytes cut ...]\n`),
      full.subarray(full.length - 32_768),
    ]);
    const file = a?.outputFile;
    expect(file).toMatchObject({ bytes: expected.length, sha256: sha256(expected), cutBytes: cut });
    expect(file?.path.startsWith(join(dir, "output"))).toBe(true);
    expect(readFileSync(file?.path as string)).toEqual(expected);
    const r = chronolog(dir, ["logs", "p/a/chatty"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(expected.toString());
    // The attempt table points at it, with its size and hash.
    const out = chronolog(dir, ["attempts", "p/a/chatty", "--output"]).stdout;
    expect(out).toContain(
      `output file ${file?.path} (${expected.length} bytes, ${cut} cut, sha256 ${file?.sha256})`,
    );
  });

  it("prints stdout and stderr as they came, by interval and attempt; a changed file is exit 5", async () => {
    const dir = setUp("logs-attempts", {
      flaky: {
        command:
          'echo "out $CHRONOLOG_ATTEMPT"; sleep 0.2; echo "err $CHRONOLOG_ATTEMPT" >&2; sleep 0.2; echo done; [ "$CHRONOLOG_ATTEMPT" = 2 ]',
        retries: 2,
      },
      quiet: { command: "true" },
    });
    const p = up(dir);
    const rows = await settled(dir, "p/a/flaky", 2);
    const [quiet] = await settled(dir, "p/a/quiet", 1);
    await stop(p);
    expect(rows.map((r) => r.status)).toEqual(["failed", "success"]);
    expect(chronolog(dir, ["logs", "p/a/flaky"]).stdout).toBe("out 2\nerr 2\ndone\n");
    const first = chronolog(dir, ["logs", "p/a/flaky", "--attempt", "1"]);
    expect(first.stdout).toBe("out 1\nerr 1\ndone\n");
    const interval = JSON.parse(chronolog(dir, ["attempts", "p/a/flaky", "--json"]).stdout)[0].logicalDate;
    expect(chronolog(dir, ["logs", "p/a/flaky", "--interval", interval, "--attempt", "2"]).stdout).toBe(
      "out 2\nerr 2\ndone\n",
    );

    const none = chronolog(dir, ["logs", "p/a/flaky", "--attempt", "3"]);
    expect(none.code).toBe(4);
    expect(none.stderr).toContain("has no attempt 3 (attempts: 1 to 2)");
    const never = chronolog(dir, ["logs", "p/a/flaky", "--interval", "2020-01-01T00:00Z"]);
    expect(never.code).toBe(4);
    expect(never.stderr).toContain("has no attempt for the interval 2020-01-01T00:00Z");
    // A day before the task began holds none of its intervals, and says which is its first (a
    // day of its life holding several needs the time: see dates-cli).
    const day = chronolog(dir, ["logs", "p/a/flaky", "--interval", "2020-01-01"]);
    expect(day.code).toBe(2);
    expect(day.stderr).toContain(
      `no interval of p/a/flaky/ALL starts on 2020-01-01 in its zone (0 * * * * (UTC)); the next starts ${interval.replace(":00.000Z", "Z")}`,
    );
    expect(chronolog(dir, ["logs", "p/a/flaky", "--attempt", "x"]).code).toBe(2);

    // Tampered with after the attempt ended: printed, and said so.
    writeFileSync(rows[0]?.outputFile?.path as string, "out 1\nerr 1\nall fine\n");
    const changed = chronolog(dir, ["logs", "p/a/flaky", "--attempt", "1"]);
    expect(changed.code).toBe(5);
    expect(changed.stderr).toContain("changed after the attempt ended");

    // Gone from the data directory: the tails the log holds stand in.
    rmSync(rows[1]?.outputFile?.path as string);
    const gone = chronolog(dir, ["logs", "p/a/flaky"]);
    expect(gone.code).toBe(0);
    expect(gone.stderr).toContain(
      `its output file ${rows[1]?.outputFile?.path} is not here (kept on the host of worker ${rows[1]?.workerId}, never written because the attempt ended before it ran, or removed); the last lines the log holds:`,
    );
    expect(gone.stdout).toBe("--- stdout\nout 2\ndone\n--- stderr\nerr 2\n");
    // An attempt that wrote nothing, its file kept elsewhere (a remote worker's host): nothing to
    // print, as when the empty file is here.
    expect(quiet?.outputFile?.bytes).toBe(0);
    rmSync(quiet?.outputFile?.path as string);
    expect(chronolog(dir, ["logs", "p/a/quiet"])).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });

  it("--follow prints a running attempt's output as it comes, then its retry, and ends with the interval", async () => {
    const dir = setUp("logs-follow", {
      slow: {
        command:
          'echo "first $CHRONOLOG_ATTEMPT"; sleep 2; echo "second $CHRONOLOG_ATTEMPT"; [ "$CHRONOLOG_ATTEMPT" = 2 ]',
        retries: 2,
      },
    });
    // Started before the scheduler: it waits for the first attempt.
    const f = chronologSpawn(dir, ["logs", "p/a/slow", "--follow"]);
    left.processes.push(f);
    let out = "";
    let err = "";
    f.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    f.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const exited = new Promise<number | null>((r) => f.once("exit", (code) => r(code)));
    await waitUntil("the follower to wait", () =>
      err.includes("waiting for p/a/slow/ALL") ? true : undefined,
    );
    const p = up(dir);
    await waitUntil("the first line", () => (out.includes("first 1") ? true : undefined));
    // Live: the attempt is still running when its first line is out.
    expect(out).not.toContain("second 1");
    expect(attempts(dir, "p/a/slow")[0]?.status).toBe("running");
    expect(await exited).toBe(0);
    await stop(p);
    expect(out).toBe("first 1\nsecond 1\nfirst 2\nsecond 2\n");
    expect(err).toMatch(/--- p\/a\/slow\/ALL \S+ attempt 1 /);
    expect(err).toMatch(/--- p\/a\/slow\/ALL \S+ attempt 2 /);
  }, 60_000);

  it("with --output-max-bytes 0 no file is kept; logs prints what the log holds, and a bad size is refused", async () => {
    const dir = setUp("logs-off", { small: { command: "echo hi; echo oops >&2; exit 1" } });
    const bad = chronolog(dir, ["up", "--output-max-bytes", "lots"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      '--output-max-bytes: takes a size in bytes such as 1048576, 512KiB or 1MiB, not "lots"',
    );
    const p = up(dir, ["--output-max-bytes", "0"]);
    const [a] = await settled(dir, "p/a/small", 1);
    await stop(p);
    expect(a?.outputFile).toBeNull();
    const r = chronolog(dir, ["logs", "p/a/small"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("its worker kept no output file");
    expect(r.stdout).toBe("--- stdout\nhi\n--- stderr\noops\n");
  });
});
