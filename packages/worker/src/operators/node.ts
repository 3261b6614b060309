import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { workerDistFile } from "../dist-dir.js";
import type { RunnerCommand, RunnerReport } from "../node-runner.js";
import { spawnIdentity, taskBaseEnv } from "../sandbox.js";
import { abortKillGraceMs, abortReason } from "./abort.js";
import type { NodeOperator } from "./spec.js";
import { TailBuffer, tailOf } from "./tail.js";
import { failure, type OperatorContext, type OperatorOutcome } from "./types.js";

/** The second argument a node task's function receives. */
export interface NodeTaskContext {
  readonly logicalDate: string;
  readonly attempt: number;
  readonly token: string;
  readonly taskKey: string;
  readonly stagingDir: string | undefined;
  /** The pid of the worker process that runs the attempt (the function runs in a child of it). */
  readonly workerPid: number;
  /** Aborted on cancel, timeout or worker shutdown: a long task should watch it. */
  readonly signal: AbortSignal;
  /** Writes a line to the attempt's output (what `chronolog logs` prints). */
  log(text: string): void;
}

/** `module` as an import specifier: a `file:` URL as is, a path resolved against the cwd. */
export function moduleUrl(module: string): string {
  if (module.startsWith("file:")) return module;
  return pathToFileURL(isAbsolute(module) ? module : resolve(process.cwd(), module)).href;
}

/**
 * What `/bin/sh` runs before it execs the task's node process: the same watchdog a shell task's
 * process group gets (see shell.ts), on fd 4, a pipe only the worker holds. When the worker
 * dies, even by SIGKILL, the read returns and the whole group goes, whatever the task's code
 * is doing (a loop that never yields never hears its channel close).
 */
const NODE_WRAPPER = [
  "( ( read -r _ <&4; kill -KILL 0 ) </dev/null >/dev/null 2>&1 & )",
  "exec 4<&-",
  'exec "$0" --input-type=module -e "$1"',
].join("\n");

/** Sends `sig` to the task's process group (its node process, what it started, its watchdog). */
function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** How long to wait for the task's output to drain after its process exits. */
const DRAIN_MS = 1000;

function runnerModule(): string {
  return workerDistFile("node-runner.js");
}

let runnerSource: string | undefined;
/**
 * The runner's code, read once and given to node inline (`-e`): the task's user need not reach
 * the worker's own files, which may lie under a directory only the scheduler's user can enter.
 */
function runnerCode(): string {
  runnerSource ??= readFileSync(runnerModule(), "utf8");
  return runnerSource;
}

/**
 * Runs the named export of the module with `(args, context)` in a process of its own, forked
 * for the attempt as the task's user, in the task's environment (see taskBaseEnv) and working
 * directory. A resolved value is success (its JSON, tail-truncated, as `stdoutTail`); a throw
 * is a failure of kind `exception`, as is the process's end before the function's (an exit, a
 * crash). What the process prints goes to the attempt's output. A timeout or cancel aborts
 * `context.signal` and settles the attempt at once; the process is killed if it has not ended
 * within the kill grace. The process talks only to the worker, and only of this attempt: the
 * task cannot send the worker reports (`process.send` is gone in it).
 */
export function runNode(spec: NodeOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  if (ctx.signal.aborted)
    return Promise.resolve(failure("exception", `cancelled: ${abortReason(ctx.signal)}`, 0));
  const env = taskBaseEnv(ctx.workDir);
  Object.assign(env, ctx.env, {
    CHRONOLOG_TOKEN: ctx.token,
    CHRONOLOG_ATTEMPT: String(ctx.attempt),
    CHRONOLOG_LOGICAL_DATE: ctx.logicalDate,
    CHRONOLOG_TASK_KEY: ctx.taskKey,
    CHRONOLOG_WORKER_PID: String(process.pid),
  });
  if (ctx.stagingDir !== undefined) env.CHRONOLOG_STAGING_DIR = ctx.stagingDir;
  else delete env.CHRONOLOG_STAGING_DIR;
  return new Promise((settle) => {
    const stderr = new TailBuffer();
    let done = false;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let timer: NodeJS.Timeout | undefined;
    let child: ChildProcess;
    const finish = (outcome: OperatorOutcome, killAfterMs?: number): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      ctx.signal.removeEventListener("abort", onAbort);
      if (killAfterMs !== undefined && child.exitCode === null && child.signalCode === null) {
        // Asked to stop (its signal is aborted): it gets the grace, then it is killed.
        killTimer = setTimeout(() => signalGroup(child, "SIGKILL"), killAfterMs);
        child.once("exit", () => clearTimeout(killTimer));
      }
      settle(outcome);
    };
    const stop = (reason: string, outcome: OperatorOutcome, graceMs: number): void => {
      if (done) return;
      try {
        if (child.connected) child.send({ kind: "abort", reason } satisfies RunnerCommand);
      } catch {}
      finish(outcome, graceMs);
    };
    const onAbort = (): void =>
      stop(
        abortReason(ctx.signal),
        failure("exception", `cancelled: ${abortReason(ctx.signal)}`, elapsed()),
        abortKillGraceMs(ctx.signal),
      );
    try {
      child = spawn("/bin/sh", ["-c", NODE_WRAPPER, process.execPath, runnerCode()], {
        cwd: ctx.workDir ?? process.cwd(),
        env,
        detached: true,
        serialization: "json",
        stdio: ["ignore", "pipe", "pipe", "ipc", "pipe"],
        ...spawnIdentity(),
      });
    } catch (err) {
      return settle(failure("exception", `starting the task's process failed: ${(err as Error).message}`, 0));
    }
    // The outcome is known once the function has ended (or the process has) and what the
    // process printed has all been read (or, after its exit, a drain's time has passed).
    let ended: (() => OperatorOutcome) | undefined;
    /**
     * Whether `ended` is only the process's exit: the function's own answer may still be on its
     * way (a message and the exit event come in either order), and takes its place.
     */
    let endedByExit = false;
    let outputOpen = 2;
    // Its channel: the answer it sent before it exited is read before the channel's end is, so
    // an outcome known only from the exit waits for that end (or the drain) before it counts.
    let channelOpen = true;
    const settleIfKnown = (): void => {
      if (ended && outputOpen === 0 && !(endedByExit && channelOpen)) finish(ended());
    };
    for (const [stream, isErr] of [
      [child.stdout, false],
      [child.stderr, true],
    ] as const) {
      let open = true;
      const close = (): void => {
        if (!open) return;
        open = false;
        outputOpen--;
        settleIfKnown();
      };
      if (!stream) close();
      else
        stream
          .on("data", (b: Buffer) => {
            if (isErr) stderr.write(b);
            ctx.output?.write(b);
          })
          .on("end", close)
          .on("close", close);
    }
    child.on("error", (err) =>
      finish(
        failure("exception", `the task's process failed: ${err.message}`, elapsed(), {
          stderrTail: stderr.toString(),
        }),
      ),
    );
    child.on("message", (msg: RunnerReport) => {
      if (done || (ended && !endedByExit)) return;
      switch (msg?.kind) {
        case "log":
          ctx.output?.write(msg.text.endsWith("\n") ? msg.text : `${msg.text}\n`);
          return;
        case "returned": {
          endedByExit = false;
          const durationMs = elapsed();
          ended = () => {
            if (msg.json !== "") ctx.output?.write(`${msg.json}\n`);
            return { ok: true, durationMs, exitCode: null, stdoutTail: tailOf(msg.json), stderrTail: "" };
          };
          settleIfKnown();
          return;
        }
        case "threw": {
          endedByExit = false;
          const durationMs = elapsed();
          ended = () => {
            const text = msg.stack ?? msg.message;
            ctx.output?.write(`${text}\n`);
            stderr.write(`${text}\n`);
            return failure("exception", msg.message, durationMs, { stderrTail: stderr.toString() });
          };
          settleIfKnown();
          return;
        }
      }
    });
    child.once("disconnect", () => {
      channelOpen = false;
      settleIfKnown();
    });
    child.stdio[4]?.on("error", () => {});
    child.once("exit", (code, signal) => {
      // What it left behind in its group goes with it (its watchdog included).
      signalGroup(child, "SIGKILL");
      if (!ended) {
        const durationMs = elapsed();
        const how = signal ? `was killed by signal ${signal}` : `exited with code ${code}`;
        endedByExit = true;
        ended = () =>
          failure("exception", `the task's process ${how} before its function returned`, durationMs, {
            stderrTail: stderr.toString(),
          });
      }
      drainTimer = setTimeout(() => finish((ended as () => OperatorOutcome)()), DRAIN_MS);
      settleIfKnown();
    });
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (spec.timeoutMs !== undefined) {
      const ms = spec.timeoutMs;
      timer = setTimeout(
        () =>
          stop(`timed out after ${ms} ms`, failure("timeout", `timed out after ${ms} ms`, elapsed()), 2000),
        ms,
      );
    }
    const run: RunnerCommand = {
      kind: "run",
      url: moduleUrl(spec.module),
      module: spec.module,
      export: spec.export,
      args: spec.args,
      context: {
        logicalDate: ctx.logicalDate,
        attempt: ctx.attempt,
        token: ctx.token,
        taskKey: ctx.taskKey,
        stagingDir: ctx.stagingDir,
        workerPid: process.pid,
      },
    };
    child.send(run, (err) => {
      if (err)
        finish(failure("exception", `the task's process could not be started: ${err.message}`, elapsed()));
    });
  });
}
