import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLI = fileURLToPath(new URL("../../services/cli/bin/chronolog.mjs", import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The environment every `chronolog` the tests start gets. Tasks run as the tests' own user
 * (CHRONOLOG_RUN_AS): most suites have their tasks write into the test's directories, which
 * the user a scheduler started as root runs them as by default (nobody) cannot reach. The
 * suites of task isolation set it otherwise.
 */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CHRONOLOG_RUN_AS: process.env.CHRONOLOG_RUN_AS ?? userInfo().username,
    CHRONOLOG_LOG_FORMAT: "json",
    CHRONOLOG_LOG_LEVEL: "warn",
    ...extra,
  };
}

export function tempDataDir(label = "cli"): string {
  return mkdtempSync(join(tmpdir(), `chronolog-${label}-`));
}

/**
 * Runs the built `chronolog` binary to completion (killed after `timeoutMs`). The test process
 * waits without running its event loop meanwhile: a process it started with piped output (see
 * chronologSpawn) is not read from, and blocks once the pipe is full. For a long call beside
 * such a process, use chronologAsync.
 */
export function chronolog(dataDir: string, args: string[], input?: string, timeoutMs = 60_000): CliResult {
  const r = spawnSync(process.execPath, [CLI, "--data-dir", dataDir, ...args], {
    encoding: "utf8",
    input,
    env: cliEnv(),
    timeout: timeoutMs,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs the built `chronolog` binary to completion (killed after `timeoutMs`) while the test
 * process goes on reading the output of the processes it started.
 */
export function chronologAsync(
  dataDir: string,
  args: string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, "--data-dir", dataDir, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: cliEnv(),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin.end(options.input ?? "");
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
  return new Promise((resolve) => {
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts `chronolog` as a long-running process; through `prefix` when given, a command that runs
 * the rest (e.g. `ip netns exec NS`).
 */
export function chronologSpawn(
  dataDir: string,
  args: string[],
  env: Record<string, string> = {},
  prefix: readonly string[] = [],
): ChildProcess {
  const [command, ...through] = [...prefix, process.execPath];
  return spawn(command as string, [...through, CLI, "--data-dir", dataDir, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: cliEnv({ CHRONOLOG_LOG_LEVEL: "info", ...env }),
  });
}

/** Processes and data directories a suite started, stopped and removed by `clear`. */
export class Leftovers {
  readonly processes: ChildProcess[] = [];
  readonly dirs: string[] = [];

  /** Stops every process still running (SIGTERM, then waits for it) and removes the directories. */
  async clear(): Promise<void> {
    for (const p of this.processes) {
      if (p.exitCode === null && p.signalCode === null) {
        p.kill("SIGTERM");
        await new Promise((r) => p.once("exit", r));
      }
    }
    for (const d of this.dirs) rmSync(d, { recursive: true, force: true });
  }
}
