import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { constants } from "node:os";
import { performance } from "node:perf_hooks";
import type { Readable } from "node:stream";
import { spawnIdentity, taskBaseEnv } from "../sandbox.js";
import { abortKillGraceMs, abortReason } from "./abort.js";
import type { ShellOperator } from "./spec.js";
import { TailBuffer } from "./tail.js";
import { failure, type OperatorContext, type OperatorOutcome } from "./types.js";

/**
 * The watchdog every task's process group gets: a subshell that blocks reading fd 3, a pipe whose
 * other end only the worker holds. When the worker dies, even by SIGKILL or the OOM killer, the
 * read returns and the watchdog kills the whole group, so no task outlives its worker
 * unsupervised. (It is forked twice so it is not a child of the task: a task that waits for all
 * its children does not wait for it.)
 */
const WATCHDOG = "( ( read -r _ <&3; kill -KILL 0 ) </dev/null >/dev/null 2>&1 & )";

/**
 * The script `/bin/sh` runs first on a cold start: the watchdog, then it closes fd 3 and execs
 * the task's own command, which keeps the spawned pid (exit codes and signals reach us unchanged).
 */
const WRAPPER = [WATCHDOG, "exec 3<&-", 'exec /bin/sh -c "$1"'].join("\n");

/** How long to wait for stdout/stderr to drain after the shell exits. */
const DRAIN_MS = 1000;

/**
 * The task's environment: the allowlist and the variables passed on purpose (see taskBaseEnv;
 * nothing else of the worker's), HOME the attempt's working directory, then the operator's env,
 * the command's (the run's variables), and the attempt's own CHRONOLOG_* variables, which
 * nothing overrides.
 */
export function shellEnv(spec: ShellOperator, ctx: OperatorContext): NodeJS.ProcessEnv {
  const env = taskBaseEnv(ctx.workDir);
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

/**
 * Shells started ahead of need, so that a task does not wait for a process to be forked from
 * the worker (a fork of a Node process costs milliseconds, and holds the worker's event loop
 * meanwhile). Each is `/bin/sh -s` in its own process group, already under its watchdog, reading
 * its script from a pipe. When a task takes one, the worker writes the task's environment (as
 * the difference from the one the shell was started with) and `eval <command>`, with stdin from
 * /dev/null and fd 3 closed: the shell runs the command itself, as `sh -c` would, and its pid is
 * the task's (exit codes and signals reach us unchanged). Where `sh -c` would exec a lone command
 * in its place (bash, busybox), the script ends with `exec /bin/sh -c <command>` instead, so the
 * task is the same process as on a cold start (a lone command of plain words is exec'd by the
 * standby shell itself, as `sh -c` would). The first thing the script does is
 * write one byte back on fd 3: a shell that exits without it never ran the task (it died while
 * idle), and the task is then started cold. An idle shell whose worker dies reads end-of-file,
 * and its watchdog fires: nothing is left behind.
 */
interface Standby {
  readonly child: ChildProcess;
  /** The environment the shell was started with. */
  readonly env: NodeJS.ProcessEnv;
  /** The user it runs as (`uid:gid`, or empty for the worker's own). */
  readonly identity: string;
}

function identityKey(): string {
  const id = spawnIdentity();
  return id.uid === undefined ? "" : `${id.uid}:${id.gid}`;
}

const standby = {
  size: 0,
  /** Whether a started shell runs its task with `exec /bin/sh -c` rather than `eval`. */
  execs: undefined as boolean | undefined,
  /** Whether /bin/sh execs a lone command (see shellExecsLastCommand); asked once. */
  shellExecs: undefined as boolean | undefined,
  idle: [] as Standby[],
  refill: undefined as NodeJS.Timeout | undefined,
  refillAt: 0,
  /** Idle shells that died one after another without being taken: each waits longer to be replaced. */
  deaths: 0,
};

/** Starts the missing shells after `delayMs`, or sooner if a refill is already due sooner. */
function refillAfter(delayMs: number): void {
  if (standby.size === 0) return;
  const at = performance.now() + delayMs;
  if (standby.refill && standby.refillAt <= at) return;
  clearTimeout(standby.refill);
  standby.refillAt = at;
  standby.refill = setTimeout(fillStandby, delayMs);
  standby.refill.unref();
}

/** The stdio of a child: stdin, stdout, stderr and fd 3 (the watchdog's pipe). */
function streamsOf(child: ChildProcess): Array<{ ref?(): unknown; unref?(): unknown } | null> {
  return child.stdio as unknown as Array<{ ref?(): unknown; unref?(): unknown } | null>;
}

function startStandby(): void {
  const env = taskBaseEnv();
  let child: ChildProcess;
  try {
    child = spawn("/bin/sh", ["-s"], {
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe", "pipe"],
      ...spawnIdentity(),
    });
  } catch {
    return;
  }
  child.on("error", () => {});
  child.stdin?.on("error", () => {});
  if (child.pid === undefined) return;
  const entry: Standby = { child, env, identity: identityKey() };
  child.once("exit", () => {
    const i = standby.idle.indexOf(entry);
    if (i < 0) return; // taken: its task's exit
    // Killed while idle: its watchdog goes with it, and it is replaced, later each time this
    // happens again.
    standby.idle.splice(i, 1);
    discardStandby(entry);
    refillAfter(backoffMs());
  });
  child.stdin?.write(`${WATCHDOG}\n`);
  // An idle shell keeps nothing alive: not its worker's event loop, not a test run.
  child.unref();
  for (const s of streamsOf(child)) s?.unref?.();
  standby.idle.push(entry);
}

/** How long to wait before replacing shells that keep dying idle (or cannot be started). */
function backoffMs(): number {
  return Math.min(30_000, 100 * 2 ** standby.deaths++);
}

function fillStandby(): void {
  clearTimeout(standby.refill);
  standby.refill = undefined;
  while (standby.idle.length < standby.size) {
    const before = standby.idle.length;
    startStandby();
    if (standby.idle.length === before) {
      // /bin/sh cannot be started now: tasks start cold meanwhile (a failed start reports its
      // spawn error), and this tries again later.
      refillAfter(backoffMs());
      return;
    }
  }
}

/**
 * Keeps `count` shells started ahead of need in this process (0, the default, starts every task
 * cold and stops the idle ones). A worker process sets it from CHRONOLOG_WARM_SHELLS. How a
 * started shell runs its task (`eval`, or `exec /bin/sh -c`) follows what `/bin/sh -c` does with
 * a lone command, asked once; `run` sets it instead (the tests run both here).
 */
export function setWarmShells(count: number, run?: "eval" | "exec"): void {
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`the number of warm shells must be a non-negative integer, got ${count}`);
  standby.size = count;
  standby.deaths = 0;
  if (run !== undefined) standby.execs = run === "exec";
  else if (count > 0) standby.execs = standby.shellExecs ??= shellExecsLastCommand();
  for (const s of standby.idle.splice(count)) discardStandby(s);
  fillStandby();
}

/** The pids (and process groups) of the started shells waiting for a task in this process. */
export function warmShellPids(): number[] {
  return standby.idle.map((s) => s.child.pid as number);
}

/** Sends `sig` to the process group `child` leads (its own, and its watchdog's). */
function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Kills a standby shell's process group (its watchdog included) and closes its pipes. */
function discardStandby(s: Standby): void {
  signalGroup(s.child, "SIGKILL");
  for (const stream of s.child.stdio) stream?.destroy();
}

/**
 * Whether `/bin/sh -c 'one command'` execs the command in place of the shell (bash and busybox
 * do; dash forks it). The task of a standby shell then runs as `exec /bin/sh -c <command>`, so
 * that its pid is the command's as on a cold start; otherwise the shell evaluates the command
 * itself, which saves starting a second shell and behaves the same.
 */
function shellExecsLastCommand(): boolean {
  const r = spawnSync("/bin/sh", ["-c", '/bin/sh -c "echo $PPID"'], { encoding: "utf8", timeout: 5000 });
  return r.stdout?.trim() === String(process.pid);
}

/**
 * Variables a shell sets for itself when it starts: a task whose environment gives one of them
 * another value than its standby shell had must start in a new shell to see what a new shell
 * makes of it (only when the standby shell evaluates the command itself).
 */
const SHELL_OWN = new Set(["IFS", "PPID", "OPTIND", "PWD", "OLDPWD", "PS1", "PS2", "PS4", "ENV", "LINENO"]);

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A lone external command of plain words (`sleep 0.3`, `/opt/etl/load --day=2026-01-01`): no
 * quoting, expansion, redirection or operator, and a first word that is neither an assignment nor
 * a word the shell gives a meaning of its own (a builtin or a reserved word). Where `/bin/sh -c`
 * execs a lone command, a standby shell execs such a command itself, as `sh -c` would, and a
 * second shell need not be started to decide so.
 */
const PLAIN_COMMAND = /^[A-Za-z0-9_./@%+,:=-]+(?: [A-Za-z0-9_./@%+,:=-]+)*$/;
const SHELL_WORDS = new Set(
  (
    ". : [ [[ alias bg bind break builtin caller case cd chdir command compgen complete compopt " +
    "continue coproc declare dirs disown do done echo elif else enable esac eval exec exit export " +
    "false fc fg fi for function getopts hash help history if in jobs kill let local logout mapfile " +
    "popd printf pushd pwd read readarray readonly return select set shift shopt source suspend test " +
    "then time times trap true type typeset ulimit umask unalias unset until wait while"
  ).split(" "),
);

export function isPlainCommand(command: string): boolean {
  if (!PLAIN_COMMAND.test(command)) return false;
  const first = command.split(" ", 1)[0] as string;
  // (A first word starting with "-" would be an option to exec.)
  return !first.includes("=") && !first.startsWith("-") && !SHELL_WORDS.has(first);
}

function quote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * The script that turns a standby shell into the task, or undefined when the task must start
 * cold: its environment differs from the shell's in a variable the shell cannot set (a name
 * that is not an identifier), or in one the shell sets for itself.
 */
function standbyScript(
  s: Standby,
  env: NodeJS.ProcessEnv,
  command: string,
  cwd: string | undefined,
): string | undefined {
  const exports: string[] = [];
  const unsets: string[] = [];
  const evaluates = standby.execs !== true;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || s.env[k] === v) continue;
    if (!NAME.test(k) || v.includes("\0") || (evaluates && SHELL_OWN.has(k))) return undefined;
    exports.push(`${k}=${quote(v)}`);
  }
  for (const k of Object.keys(s.env)) {
    if (env[k] !== undefined) continue;
    if (!NAME.test(k) || (evaluates && SHELL_OWN.has(k))) return undefined;
    unsets.push(k);
  }
  if (command.includes("\0") || cwd?.includes("\0")) return undefined;
  const lines = ["printf r >&3"];
  // A directory that cannot be entered fails the task as a cold start would (no command runs).
  if (cwd !== undefined) lines.push(`cd ${quote(cwd)} || exit 126`);
  if (exports.length > 0) lines.push(`export ${exports.join(" ")}`);
  if (unsets.length > 0) lines.push(`unset ${unsets.join(" ")}`);
  lines.push(
    evaluates
      ? `eval ${quote(command)} </dev/null 3<&-`
      : isPlainCommand(command)
        ? `exec ${command} </dev/null 3<&-`
        : `exec /bin/sh -c ${quote(command)} </dev/null 3<&-`,
    "",
  );
  return lines.join("\n");
}

/** A live standby shell given the task's script, or undefined (start cold). */
function takeStandby(
  env: NodeJS.ProcessEnv,
  command: string,
  cwd: string | undefined,
): ChildProcess | undefined {
  const identity = identityKey();
  for (;;) {
    const s = standby.idle.shift();
    if (!s) return undefined;
    if (s.child.exitCode !== null || s.child.signalCode !== null) continue;
    // Started as another user (the worker was configured since): not for this task.
    if (s.identity !== identity) {
      discardStandby(s);
      refillAfter(0);
      continue;
    }
    const script = standbyScript(s, env, command, cwd);
    if (script === undefined) {
      standby.idle.unshift(s);
      return undefined;
    }
    standby.deaths = 0;
    refillAfter(0);
    s.child.ref();
    for (const st of streamsOf(s.child)) st?.ref?.();
    s.child.stdin?.end(script);
    return s.child;
  }
}

function signalOfExitCode(code: number): string | undefined {
  if (code <= 128) return undefined;
  const n = code - 128;
  return Object.entries(constants.signals).find(([, v]) => v === n)?.[0];
}

/**
 * Runs `/bin/sh -c <command>` in its own process group: in a shell started ahead of need when
 * one waits (see setWarmShells), else in a new one. A timeout, a cancel or a worker shutdown
 * sends SIGTERM to the whole group and SIGKILL after a grace; when the shell exits, whatever it
 * left behind in its group (background jobs) is killed too.
 */
export async function runShell(spec: ShellOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  const t0 = performance.now();
  if (ctx.signal.aborted) return failure("exception", `cancelled: ${abortReason(ctx.signal)}`, 0);
  const env = shellEnv(spec, ctx);
  const warm = spec.cwd === undefined ? takeStandby(env, spec.command, ctx.workDir) : undefined;
  if (warm) {
    const outcome = await supervise(warm, spec, ctx, t0, true);
    if (outcome !== "standby lost") return outcome;
  }
  const child = spawn("/bin/sh", ["-c", WRAPPER, "chronolog-shell", spec.command], {
    cwd: spec.cwd ?? ctx.workDir,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
    ...spawnIdentity(),
  });
  return (await supervise(child, spec, ctx, t0, false)) as OperatorOutcome;
}

/**
 * Watches a task's shell to its end. A standby shell that exits without having acknowledged its
 * script never ran the task: `standby lost`.
 */
function supervise(
  child: ChildProcess,
  spec: ShellOperator,
  ctx: OperatorContext,
  t0: number,
  warm: boolean,
): Promise<OperatorOutcome | "standby lost"> {
  const elapsed = () => Math.round(performance.now() - t0);
  return new Promise((resolve) => {
    const out = new TailBuffer();
    const err = new TailBuffer();
    let acknowledged = !warm;
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let spawnError: Error | undefined;
    let done = false;
    const timers: NodeJS.Timeout[] = [];

    const terminate = (graceMs: number): void => {
      if (exit) return;
      if (graceMs <= 0) {
        signalGroup(child, "SIGKILL");
      } else {
        signalGroup(child, "SIGTERM");
        timers.push(setTimeout(() => signalGroup(child, "SIGKILL"), graceMs));
      }
    };
    const onAbort = (): void => terminate(abortKillGraceMs(ctx.signal));

    const outcome = (): OperatorOutcome | "standby lost" => {
      const durationMs = elapsed();
      const tails = { stdoutTail: out.toString(), stderrTail: err.toString(), exitCode: exit?.code ?? null };
      if (spawnError) return failure("exception", `spawn failed: ${spawnError.message}`, durationMs, tails);
      if (!acknowledged && !ctx.signal.aborted && !timedOut) return "standby lost";
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

    // The outcome is known once the shell has exited and its output has ended (and, for a
    // standby shell, once its acknowledgement has been read or can no longer come): the
    // watchdog's pipe closes only after the watchdog has been killed, which need not be waited for.
    let outputOpen = 2;
    let watchdogPipeOpen = true;
    const settleIfKnown = (): void => {
      if (exit && outputOpen === 0 && (acknowledged || !watchdogPipeOpen)) finish();
    };
    /** An output has ended at its end-of-file (or, failing that, when its pipe closes). */
    const follow = (stream: Readable | null, into: TailBuffer): void => {
      let open = true;
      const end = (): void => {
        if (!open) return;
        open = false;
        outputOpen--;
        settleIfKnown();
      };
      if (!stream) end();
      else
        stream
          .on("data", (b: Buffer) => {
            into.write(b);
            ctx.output?.write(b);
          })
          .on("end", end)
          .on("close", end);
    };
    follow(child.stdout, out);
    follow(child.stderr, err);
    child.stdio[3]?.on("error", () => {});
    if (warm) {
      const pipe = child.stdio[3] as Readable | null;
      const gone = (): void => {
        watchdogPipeOpen = false;
        settleIfKnown();
      };
      pipe
        ?.on("data", () => {
          acknowledged = true;
          settleIfKnown();
        })
        .on("end", gone)
        .on("close", gone);
    }
    child.on("error", (e) => {
      spawnError = e;
      if (child.pid === undefined) finish();
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      for (const t of timers) clearTimeout(t);
      signalGroup(child, "SIGKILL");
      timers.push(setTimeout(finish, DRAIN_MS));
      settleIfKnown();
    });
    child.on("close", finish);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (spec.timeoutMs !== undefined) {
      timers.push(
        // (What is left of it, for a task started cold after its standby shell was lost.)
        setTimeout(
          () => {
            timedOut = true;
            terminate(abortKillGraceMs(ctx.signal));
          },
          Math.max(0, spec.timeoutMs - (performance.now() - t0)),
        ),
      );
    }
  });
}
