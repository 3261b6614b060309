import { spawn } from "node:child_process";
import { constants } from "node:os";
import { performance } from "node:perf_hooks";
import { abortKillGraceMs, abortReason } from "./abort.js";
import type { ShellOperator } from "./spec.js";
import { TailBuffer } from "./tail.js";
import { failure, type OperatorContext, type OperatorOutcome } from "./types.js";

/**
 * The script `/bin/sh` runs first. It starts a watchdog in the task's process group that blocks
 * reading fd 3, a pipe whose other end only the worker holds: when the worker dies, even by
 * SIGKILL or the OOM killer, the read returns and the watchdog kills the whole group, so no task
 * outlives its worker unsupervised. (It is forked twice so it is not a child of the task: a task
 * that waits for all its children does not wait for it.) Then the script closes fd 3 and execs the
 * task's own command, which keeps the spawned pid (exit codes and signals reach us unchanged).
 */
const WRAPPER = [
  "( ( read -r _ <&3; kill -KILL 0 ) </dev/null >/dev/null 2>&1 & )",
  "exec 3<&-",
  'exec /bin/sh -c "$1"',
].join("\n");

/** How long to wait for stdout/stderr to drain after the shell exits. */
const DRAIN_MS = 1000;

/** Environment variables of the worker's own IPC channel, which a task must not inherit. */
const PRIVATE_ENV = ["NODE_CHANNEL_FD", "NODE_CHANNEL_SERIALIZATION_MODE", "NODE_UNIQUE_ID"];

export function shellEnv(spec: ShellOperator, ctx: OperatorContext): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of PRIVATE_ENV) delete env[k];
  Object.assign(env, spec.env, ctx.env, {
    CHRONOLOG_TOKEN: ctx.token,
    CHRONOLOG_ATTEMPT: String(ctx.attempt),
    CHRONOLOG_LOGICAL_DATE: ctx.logicalDate,
    CHRONOLOG_TASK_KEY: ctx.taskKey,
    CHRONOLOG_WORKER_PID: String(process.pid),
  });
  if (ctx.stagingDir !== undefined) env.CHRONOLOG_STAGING_DIR = ctx.stagingDir;
  else delete env.CHRONOLOG_STAGING_DIR;
  return env;
}

function signalOfExitCode(code: number): string | undefined {
  if (code <= 128) return undefined;
  const n = code - 128;
  return Object.entries(constants.signals).find(([, v]) => v === n)?.[0];
}

/**
 * Runs `/bin/sh -c <command>` in its own process group. A timeout, a cancel or a worker shutdown
 * sends SIGTERM to the whole group and SIGKILL after a grace; when the shell exits, whatever it
 * left behind in its group (background jobs) is killed too.
 */
export function runShell(spec: ShellOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  if (ctx.signal.aborted)
    return Promise.resolve(failure("exception", `cancelled: ${abortReason(ctx.signal)}`, 0));

  return new Promise((resolve) => {
    const out = new TailBuffer();
    const err = new TailBuffer();
    const child = spawn("/bin/sh", ["-c", WRAPPER, "chronolog-shell", spec.command], {
      cwd: spec.cwd,
      env: shellEnv(spec, ctx),
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let spawnError: Error | undefined;
    let done = false;
    const timers: NodeJS.Timeout[] = [];

    const killGroup = (sig: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const terminate = (graceMs: number): void => {
      if (exit) return;
      if (graceMs <= 0) {
        killGroup("SIGKILL");
      } else {
        killGroup("SIGTERM");
        timers.push(setTimeout(() => killGroup("SIGKILL"), graceMs));
      }
    };
    const onAbort = (): void => terminate(abortKillGraceMs(ctx.signal));

    const outcome = (): OperatorOutcome => {
      const durationMs = elapsed();
      const tails = { stdoutTail: out.toString(), stderrTail: err.toString(), exitCode: exit?.code ?? null };
      if (spawnError) return failure("exception", `spawn failed: ${spawnError.message}`, durationMs, tails);
      if (ctx.signal.aborted) {
        return failure("exception", `cancelled: ${abortReason(ctx.signal)}`, durationMs, tails);
      }
      if (timedOut) return failure("timeout", `timed out after ${spec.timeoutMs} ms`, durationMs, tails);
      if (exit?.signal) return failure("signal", `killed by signal ${exit.signal}`, durationMs, tails);
      const code = exit?.code ?? null;
      if (code !== 0) {
        const sig = code === null ? undefined : signalOfExitCode(code);
        const hint = sig ? ` (a child was probably killed by ${sig})` : "";
        return failure("exit_code", `exited with code ${code}${hint}`, durationMs, tails);
      }
      return { ok: true, durationMs, ...tails };
    };
    const finish = (): void => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      ctx.signal.removeEventListener("abort", onAbort);
      for (const s of child.stdio) s?.destroy();
      resolve(outcome());
    };

    child.stdout?.on("data", (b: Buffer) => out.write(b));
    child.stderr?.on("data", (b: Buffer) => err.write(b));
    child.stdio[3]?.on("error", () => {});
    child.on("error", (e) => {
      spawnError = e;
      if (child.pid === undefined) finish();
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      for (const t of timers) clearTimeout(t);
      killGroup("SIGKILL");
      timers.push(setTimeout(finish, DRAIN_MS));
    });
    child.on("close", finish);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (spec.timeoutMs !== undefined) {
      timers.push(
        setTimeout(() => {
          timedOut = true;
          terminate(abortKillGraceMs(ctx.signal));
        }, spec.timeoutMs),
      );
    }
  });
}
