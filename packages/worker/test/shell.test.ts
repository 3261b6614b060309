import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPlainCommand, runShell, setWarmShells, warmShellPids } from "../src/operators/shell.js";
import { parseOperator, type ShellOperator } from "../src/operators/spec.js";
import { AttemptAbort } from "../src/operators/types.js";
import { OUTPUT_TAIL_BYTES } from "../src/protocol.js";
import { configureTasks } from "../src/sandbox.js";
import {
  ctxFor,
  harness,
  isAlive,
  processGroup,
  readPid,
  runCmd,
  shell,
  tempDir,
  waitFor,
} from "./helpers.js";

const op = (command: string, extra: Record<string, unknown> = {}) =>
  parseOperator(shell(command, extra)) as ShellOperator;

// Every behaviour holds whether the task starts in a new shell (cold) or in one started ahead of
// need (warm, as in a worker process, which keeps two by default), whichever way the started
// shell runs it: `eval` (where /bin/sh is dash, as here) or `exec /bin/sh -c` (bash, busybox).
describe.each([
  ["cold", 0, undefined],
  ["warm (eval)", 2, "eval"],
  ["warm (exec)", 2, "exec"],
] as const)("shell operator, %s start", (_mode, warmShells, run) => {
  beforeAll(() => setWarmShells(warmShells, run));
  afterAll(() => setWarmShells(0));

  it("succeeds with exit code 0 and keeps stdout and stderr", async () => {
    const o = await runShell(op("echo out; echo err >&2"), ctxFor());
    expect(o).toMatchObject({ ok: true, exitCode: 0, stdoutTail: "out\n", stderrTail: "err\n" });
    expect(o.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("fails with exit_code on a non-zero exit", async () => {
    const o = await runShell(op("echo before; exit 3"), ctxFor());
    expect(o).toMatchObject({ ok: false, exitCode: 3, stdoutTail: "before\n" });
    expect(o.error).toEqual({ kind: "exit_code", message: "exited with code 3" });
  });

  it("keeps only the last 4 KiB of a 1 MB stderr", async () => {
    const o = await runShell(op("head -c 1048576 /dev/zero | tr '\\0' x >&2; echo END >&2"), ctxFor());
    expect(o.ok).toBe(true);
    expect(Buffer.byteLength(o.stderrTail)).toBe(OUTPUT_TAIL_BYTES);
    expect(o.stderrTail.endsWith("xxxEND\n")).toBe(true);
  });

  it("reports a child killed by a signal as kind signal, naming it", async () => {
    const o = await runShell(op("kill -KILL $$"), ctxFor());
    expect(o.ok).toBe(false);
    expect(o.error?.kind).toBe("signal");
    expect(o.error?.message).toContain("SIGKILL");
    expect(o.exitCode).toBeNull();
  });

  it("on timeout kills the whole process group, grandchildren included", async () => {
    const dir = await tempDir();
    const pidFile = join(dir, "grandchild.pid");
    const t0 = Date.now();
    const o = await runShell(op(`sleep 30 & echo $! > ${pidFile}; wait`, { timeoutMs: 300 }), ctxFor());
    expect(o.error?.kind).toBe("timeout");
    expect(o.error?.message).toContain("300 ms");
    expect(Date.now() - t0).toBeLessThan(2500);
    const pid = readPid(pidFile);
    expect(pid).toBeDefined();
    await waitFor(() => !isAlive(pid!), 2000);
  });

  it("escalates to SIGKILL when the task ignores SIGTERM", async () => {
    const ac2 = new AbortController();
    setTimeout(() => ac2.abort(new AttemptAbort("hard stop", 200)), 100);
    const o = await runShell(op("trap '' TERM; sleep 10; sleep 10"), ctxFor(ac2.signal));
    expect(o.error).toEqual({ kind: "exception", message: "cancelled: hard stop" });
    expect(o.durationMs).toBeLessThan(1500);
  });

  it("kills background jobs the shell leaves behind when it exits", async () => {
    const dir = await tempDir();
    const pidFile = join(dir, "bg.pid");
    const t0 = Date.now();
    const o = await runShell(op(`sleep 30 & echo $! > ${pidFile}; echo done`), ctxFor());
    expect(o).toMatchObject({ ok: true, stdoutTail: "done\n" });
    expect(Date.now() - t0).toBeLessThan(1500);
    await waitFor(() => !isAlive(readPid(pidFile)!), 2000);
  });

  it.skipIf(!existsSync("/usr/bin/perl"))(
    "does not make a task that reaps all its children wait for the watchdog",
    async () => {
      const o = await runShell(
        op("exec perl -e 'while (wait() != -1) {} print qq(ok\\n)'", { timeoutMs: 3000 }),
        ctxFor(),
      );
      expect(o).toMatchObject({ ok: true, stdoutTail: "ok\n" });
    },
  );

  it("runs a lone command of plain words with its arguments as they are", async () => {
    const o = await runShell(op("/bin/echo a=b --x=1 ./p@q%r+s,t:u"), ctxFor());
    expect(o).toMatchObject({ ok: true, exitCode: 0, stdoutTail: "a=b --x=1 ./p@q%r+s,t:u\n" });
    const env = await runShell(op("printenv A", { env: { A: "it's" } }), ctxFor());
    expect(env).toMatchObject({ ok: true, stdoutTail: "it's\n" });
  });

  it("reports a lone command that is not found as exit code 127, saying so", async () => {
    const o = await runShell(op("chronolog-no-such-command --flag"), ctxFor());
    expect(o).toMatchObject({ ok: false, exitCode: 127 });
    expect(o.error?.kind).toBe("exit_code");
    expect(o.stderrTail).toMatch(/chronolog-no-such-command: .*not found/);
  });

  it("runs in cwd and reports a spawn failure as an exception", async () => {
    const dir = await tempDir();
    expect((await runShell(op("pwd", { cwd: dir }), ctxFor())).stdoutTail.trim()).toBe(dir);
    const o = await runShell(op("true", { cwd: join(dir, "missing") }), ctxFor());
    expect(o.error?.kind).toBe("exception");
    expect(o.error?.message).toContain("spawn failed");
  });

  it("passes the allowlist, operator and command env plus the CHRONOLOG_* variables, not the rest of the worker's", async () => {
    const { runtime, finished } = harness({ stagingRoot: await tempDir() });
    process.env.CHRONOLOG_TEST_INHERITED = "inherited";
    process.env.SECRET_OF_THE_WORKER = "hidden";
    process.env.LC_TEST_LOCALE = "kept";
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not templates
    const unset = "${NODE_CHANNEL_FD:-none}|${CHRONOLOG_TEST_INHERITED:-none}|${SECRET_OF_THE_WORKER:-none}";
    const cmd = (token: string) =>
      runCmd(
        shell(
          `echo "${unset}|$LC_TEST_LOCALE|$A|$B|$CHRONOLOG_TOKEN|$CHRONOLOG_ATTEMPT|$CHRONOLOG_LOGICAL_DATE|$CHRONOLOG_TASK_KEY"; basename "$CHRONOLOG_STAGING_DIR"`,
          { env: { A: "from-op", B: "from-op" } },
        ),
        { env: { B: "from-cmd", CHRONOLOG_TOKEN: "spoofed" }, attempt: 3, token },
      );
    try {
      runtime.handle({ kind: "batch", messages: [cmd("tok-env")] });
      const r = await finished("tok-env");
      expect(r.kind).toBe("succeeded");
      expect(r.stdoutTail).toBe(
        "none|none|none|kept|from-op|from-cmd|tok-env|3|2026-11-28T02:00:00.000Z|sales/acme/orders/ALL\ntok-env\n",
      );
      // A variable passed on purpose gets through; the others still do not.
      configureTasks({ passEnv: ["CHRONOLOG_TEST_INHERITED"] });
      runtime.handle({ kind: "batch", messages: [cmd("tok-env-2")] });
      const passed = await finished("tok-env-2");
      expect(passed.stdoutTail.split("|").slice(0, 3)).toEqual(["none", "inherited", "none"]);
    } finally {
      configureTasks({ passEnv: [] });
      delete process.env.CHRONOLOG_TEST_INHERITED;
      delete process.env.SECRET_OF_THE_WORKER;
      delete process.env.LC_TEST_LOCALE;
    }
  });

  it("gives the task what a new shell makes of IFS, PPID and OPTIND in its environment", async () => {
    const command = 'x=a,b; set -- $x; echo "$# $OPTIND"; [ "$PPID" = 1 ] && echo forged || echo real';
    const env = { IFS: ",", PPID: "1", OPTIND: "5" };
    const reference = spawnSync("/bin/sh", ["-c", command], {
      env: { ...process.env, ...env },
      encoding: "utf8",
    });
    const o = await runShell(op(command, { env }), ctxFor());
    expect(o).toMatchObject({ ok: true, stdoutTail: reference.stdout });
  });

  it("sets CHRONOLOG_WORKER_PID to the worker's pid, whatever the operator or command env says", async () => {
    const o = await runShell(op('echo "$CHRONOLOG_WORKER_PID"', { env: { CHRONOLOG_WORKER_PID: "1" } }), {
      ...ctxFor(),
      env: { CHRONOLOG_WORKER_PID: "2" },
    });
    expect(o).toMatchObject({ ok: true, stdoutTail: `${process.pid}\n` });
  });
});

describe("shells started ahead of need", () => {
  beforeAll(() => setWarmShells(2));
  afterAll(() => setWarmShells(0));

  it("runs a task in a started shell, as its own process, and starts a replacement", async () => {
    const ready = warmShellPids();
    expect(ready).toHaveLength(2);
    const o = await runShell(op("echo $$"), ctxFor());
    const pid = Number(o.stdoutTail.trim());
    expect(ready).toContain(pid);
    await waitFor(() => warmShellPids().length === 2);
    expect(warmShellPids()).not.toContain(pid);
    // Nothing of the task's shell is left: its watchdog went with it.
    await waitFor(() => processGroup(pid).length === 0, 2000);
  });

  it("gives the task the worker's environment as it is now, not as it was when the shell started", async () => {
    await waitFor(() => warmShellPids().length === 2);
    configureTasks({ passEnv: ["CHRONOLOG_TEST_LATE"] });
    process.env.CHRONOLOG_TEST_LATE = "set after the shell started";
    const home = process.env.HOME;
    delete process.env.HOME;
    try {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
      const command = 'echo "$CHRONOLOG_TEST_LATE|${HOME-unset}|$A"';
      const o = await runShell(op(command, { env: { A: "it's" } }), ctxFor());
      expect(o).toMatchObject({ ok: true, stdoutTail: "set after the shell started|unset|it's\n" });
    } finally {
      configureTasks({ passEnv: [] });
      delete process.env.CHRONOLOG_TEST_LATE;
      if (home !== undefined) process.env.HOME = home;
    }
  });

  it("starts a task cold when its environment names a variable the shell cannot set", async () => {
    await waitFor(() => warmShellPids().length === 2);
    const ready = warmShellPids();
    const o = await runShell(op("echo $$", { env: { "odd.name": "x" } }), ctxFor());
    expect(o.ok).toBe(true);
    expect(ready).not.toContain(Number(o.stdoutTail.trim()));
    expect(warmShellPids()).toEqual(ready);
  });

  it("runs a task exactly once, cold, when the started shells died while idle", async () => {
    await waitFor(() => warmShellPids().length === 2);
    const dir = await tempDir();
    const file = join(dir, "runs");
    const killed = warmShellPids();
    // The shells alone, not their watchdogs: those go with them.
    for (const pid of killed) process.kill(pid, "SIGKILL");
    const o = await runShell(op(`echo ran >> ${file}; echo done`), ctxFor());
    expect(o).toMatchObject({ ok: true, stdoutTail: "done\n" });
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(file, "utf8")).toBe("ran\n");
    await waitFor(() => killed.every((pid) => processGroup(pid).length === 0), 2000);
    await waitFor(() => warmShellPids().length === 2);
  });

  it("execs only a lone external command of plain words itself (else the command goes to /bin/sh -c)", () => {
    for (const plain of ["sleep 0.3", "/opt/etl/load --day=2026-01-01 a,b x@y", "./run.sh 50%"])
      expect(isPlainCommand(plain), plain).toBe(true);
    for (const other of [
      "exit 3", // a builtin: exec would look for a program named exit
      "echo hi",
      ": nothing",
      ". ./env.sh",
      "A=1 env", // an assignment
      "declare -x A", // a builtin of bash, which may be /bin/sh
      "-a name", // an option to exec, not a command
      "if true",
      "sleep 1; echo done",
      "sleep $T",
      "ls *.csv",
      "cat < in",
      "echo 'quoted'",
      "~/bin/job",
      "sleep  1", // two spaces: left to the shell rather than reasoned about
      "sleep 1\necho x",
      "",
    ])
      expect(isPlainCommand(other), other).toBe(false);
  });

  it("refuses a negative number of shells", () => {
    expect(() => setWarmShells(-1)).toThrow(/non-negative integer, got -1/);
    expect(warmShellPids()).toHaveLength(2);
  });
});
