import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LATEST_HOUR, readLog, startUp, stopUp, tasksJson, type Up } from "../faults/support.js";
import { CLI, chronolog, cliEnv, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * A task cannot reach the scheduler: started as root, the scheduler runs its tasks as nobody,
 * in a clean environment, with the data directory out of their reach. Each task below tries
 * what a holder of a project-limited declare token could make a task do; none gets anywhere,
 * and the log holds nothing of it.
 */
const asRoot = process.getuid?.() === 0;
const SECRET = "s3cr3t-for-the-scheduler-only-7f1c";
const left = new Leftovers();
afterAll(() => left.clear());

interface AttemptRow {
  status: string;
  endReason?: string | null;
  stdoutTail?: string;
  stderrTail?: string;
  outputFile?: { path: string };
}

function attempts(dir: string, task: string): AttemptRow[] {
  const r = chronolog(dir, ["attempts", task, "--json"]);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as AttemptRow[];
}

/** Every file under `root`, symbolic links not followed. */
function filesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    const st = lstatSync(p);
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
    else if (st.isFile()) out.push(p);
  };
  walk(root);
  return out;
}

describe.skipIf(!asRoot)("a task cannot reach the scheduler", () => {
  let dir: string;
  let up: Up;

  it("runs tasks as nobody: the data directory, the scheduler's environment and the worker's channel are out of reach", async () => {
    dir = tempDataDir("isolation");
    left.dirs.push(dir, `${dir}-tasks`);
    // The node task's module, where nobody can read it.
    const modDir = tempDataDir("isolation-module");
    left.dirs.push(modDir);
    chmodSync(modDir, 0o755);
    const mod = join(modDir, "task.mjs");
    writeFileSync(
      mod,
      `export function forge(_args, ctx) {
  process.send({ kind: "batch", messages: [{ kind: "succeeded", token: ctx.token, attempt: ctx.attempt, workerId: "forged", at: new Date().toISOString(), durationMs: 0, exitCode: 0, stdoutTail: "forged", stderrTail: "" }] });
  return "forged";
}
export async function readLog() {
  const { readFileSync } = await import("node:fs");
  return readFileSync(${JSON.stringify(join(dir, "log.db"))}).length;
}
`,
      { mode: 0o644 },
    );
    const end = new Date(Date.parse(LATEST_HOUR) + 1_800_000).toISOString();
    const task = (name: string, operator: string, extra = "") =>
      `  - { project: p, account: a, name: ${name}, cron: "0 * * * *", startDate: "${LATEST_HOUR}", endDate: "${end}", idempotent: true, retry: { maxAttempts: 1 }, operator: ${operator}${extra} }`;
    // An alert sink's command is declared code too: it runs as the tasks do.
    const sink = `echo "user=$(id -un) secret=\${SECRET_FOR_SCHEDULER:-none} log=$(head -c 6 ${join(dir, "log.db")} 2>&1 | head -c 120)" >&2; exit 1`;
    const shell = (command: string) => `{ type: shell, command: ${JSON.stringify(command)} }`;
    const forgedToken = JSON.stringify({
      name: "forged",
      scope: "admin",
      projects: [],
      sha256: "0".repeat(64),
    });
    const yaml = [
      "tasks:",
      task("read_log", shell(`head -c 16 ${join(dir, "log.db")}`)),
      task("ls_data", shell(`ls -la ${dir}`)),
      task(
        "append",
        shell(
          `${process.execPath} ${CLI} --data-dir ${dir} log append token-forged -t AccessTokenIssued -d '${forgedToken}' --actor api:admin`,
        ),
      ),
      task(
        "print_env",
        shell(
          "env; echo found=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c SECRET_FOR_SCHEDULER); printenv SECRET_FOR_SCHEDULER",
        ),
      ),
      task("forge", `{ type: node, module: ${JSON.stringify(mod)}, export: forge }`),
      task(
        "node_read_log",
        `{ type: node, module: ${JSON.stringify(mod)}, export: readLog }`,
        `, alerts: [{ on: [task_failed], command: ${JSON.stringify(sink)} }]`,
      ),
      task(
        "ok",
        shell(
          'echo "$(id -un) home=$HOME cwd=$(pwd)"; echo kept > "$HOME/note" && cat "$HOME/note"; echo part > "$CHRONOLOG_STAGING_DIR/out.csv" && echo staged',
        ),
      ),
      "",
    ].join("\n");
    const file = join(dir, "tasks.yaml");
    writeFileSync(file, yaml);
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.code, declared.stderr).toBe(0);
    // As an older version left it: open to all. The scheduler takes that away at start.
    chmodSync(dir, 0o755);
    chmodSync(join(dir, "log.db"), 0o644);
    const before = await readLog(dir);

    // The default user (nobody, the scheduler being root), and a secret in the scheduler's environment.
    up = startUp(dir, { CHRONOLOG_RUN_AS: "", SECRET_FOR_SCHEDULER: SECRET });
    left.processes.push(up.proc);
    await waitUntil("every task to end", () => {
      const rows = tasksJson(dir);
      return rows.length === 7 &&
        rows.every((t) => t.prevIntervalStart === LATEST_HOUR || t.condition === "failed")
        ? rows
        : undefined;
    });
    // (Waited for: every task may have ended by the first look, a CLI read that holds this
    // thread, before the output `up` wrote meanwhile has been read.)
    await waitUntil("the start-up line", () => (up.log.includes("tasks run as nobody") ? true : undefined));
    const alertFailed = await waitUntil("the alert sink to have run", async () =>
      (await readLog(dir)).find((e) => e.type === "AlertDeliveryFailed"),
    );
    const sinkSaid = (alertFailed.data as { error: string }).error;
    expect(sinkSaid).toMatch(/user=nobody secret=none log=head: cannot open .*Permission denied/);

    const only = (name: string): AttemptRow => {
      const rows = attempts(dir, `p/a/${name}`);
      expect(rows, name).toHaveLength(1);
      return rows[0] as AttemptRow;
    };
    // The data directory cannot be read, listed or written.
    const readLogAttempt = only("read_log");
    expect(readLogAttempt.stderrTail).toMatch(/Permission denied/);
    expect(readLogAttempt).toMatchObject({ status: "failed" });
    expect(readLogAttempt.stdoutTail).not.toContain("SQLite");
    const ls = only("ls_data");
    expect(ls).toMatchObject({ status: "failed" });
    expect(ls.stderrTail).toMatch(/Permission denied/);
    const append = only("append");
    expect(append).toMatchObject({ status: "failed" });
    expect(append.stderrTail).toMatch(/unable to open database|permission denied|EACCES/i);
    // The scheduler's environment is not the task's, nor readable from /proc.
    const env = only("print_env");
    expect(env).toMatchObject({ status: "failed", endReason: expect.stringContaining("exited with code 1") });
    expect(env.stdoutTail).toContain("found=0");
    expect(env.stdoutTail).not.toContain(SECRET);
    expect(env.stdoutTail).not.toMatch(/CHRONOLOG_DATA_DIR|CHRONOLOG_LOG_FORMAT|CHRONOLOG_RUN_AS/);
    expect(env.stdoutTail).toContain(`HOME=${dir}-tasks/work/`);
    // A node task has no channel to its worker, and cannot read the log either.
    const forge = only("forge");
    expect(forge).toMatchObject({ status: "failed" });
    expect(forge.endReason).toMatch(/process\.send is not a function/);
    const nodeRead = only("node_read_log");
    expect(nodeRead).toMatchObject({ status: "failed" });
    expect(nodeRead.endReason).toMatch(/EACCES/);
    // What a task is meant to do still works: its own HOME, working and staging directories.
    const ok = only("ok");
    expect(ok).toMatchObject({ status: "success" });
    expect(ok.stdoutTail).toMatch(
      new RegExp(`^nobody home=${dir}-tasks/work/\\S+ cwd=${dir}-tasks/work/\\S+\\nkept\\nstaged\\n$`),
    );
    // Its output file is the worker's, complete.
    expect(readFileSync(ok.outputFile?.path as string, "utf8")).toBe(ok.stdoutTail);

    // Nothing forged in the log: every event since the declaration is the scheduler's own.
    const events = await readLog(dir);
    const added = events.slice(before.length);
    expect(added.length).toBeGreaterThan(0);
    expect(added.filter((e) => e.type === "AccessTokenIssued")).toEqual([]);
    expect(added.filter((e) => e.type === "AttemptSucceeded").map((e) => e.streamId)).toEqual([
      expect.stringContaining("p/a/ok/"),
    ]);
    expect(new Set(added.map((e) => e.metadata.actor.split(":")[0]))).toEqual(new Set(["scheduler"]));
    expect(JSON.parse(chronolog(dir, ["token", "list", "--json"]).stdout)).toEqual([]);

    await stopUp(up);
    // The data directory is its user's alone (its last checkpoint included), and holds the
    // secret nowhere.
    expect(existsSync(join(dir, "projection.snapshot.json"))).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of filesUnder(dir)) {
      expect((statSync(f).mode & 0o077).toString(8), f).toBe("0");
      expect(readFileSync(f).includes(SECRET), f).toBe(false);
    }
    expect(filesUnder(dir).some((f) => f.includes(`${join(dir, "output")}/`))).toBe(true);
    // Attempts' working directories go with them.
    expect(readdirSync(join(`${dir}-tasks`, "work"))).toEqual([]);
  }, 120_000);

  it("gives tasks a directory under /var/lib/chronolog when the default is out of their reach", async () => {
    // A checkout under a directory of mode 0700 (a home, a fresh temporary directory): nobody
    // cannot reach `DATA_DIR-tasks` there. Given no --task-dir, the tasks run all the same.
    const parent = tempDataDir("isolation-away");
    left.dirs.push(parent);
    chmodSync(parent, 0o700);
    const data = join(parent, "data");
    const file = join(parent, "t.yaml");
    writeFileSync(
      file,
      `tasks:\n  - { project: p, account: a, name: who, cron: "0 * * * *", startDate: "${LATEST_HOUR}", catchup: false, operator: { type: shell, command: "id -un; pwd" } }\n`,
    );
    expect(chronolog(data, ["declare", file]).code).toBe(0);
    const away = startUp(data, { CHRONOLOG_RUN_AS: "" }, ["--http", "off"]);
    left.processes.push(away.proc);
    await waitUntil("the task to end", () =>
      attempts(data, "p/a/who")[0]?.status === "success" ? true : undefined,
    );
    await stopUp(away);
    const [a] = attempts(data, "p/a/who");
    const line = away.log.split("\n").find((l) => l.includes("tasks run as nobody")) as string;
    const taskDir = (JSON.parse(line) as { taskDir: string }).taskDir;
    expect(taskDir).toMatch(/^\/var\/lib\/chronolog\/tasks-[0-9a-f]{16}$/);
    expect(line).toContain(
      `since nobody cannot reach ${data}-tasks (${parent} is mode 0700): --task-dir chooses another`,
    );
    expect(a?.stdoutTail).toContain("nobody");
    expect(a?.stdoutTail).toContain(`${taskDir}/work/`);
    expect(statSync(taskDir).mode & 0o777).toBe(0o711);
    expect(existsSync(`${data}-tasks`)).toBe(false);
    left.dirs.push(taskDir);
    // One found there that another user owns is never used: up refuses as it would without it.
    chownSync(taskDir, 65534, 65534);
    const r = spawnSync(process.execPath, [CLI, "--data-dir", data, "up", "--http", "off"], {
      encoding: "utf8",
      env: cliEnv({ CHRONOLOG_RUN_AS: "" }),
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      `--task-dir ${data}-tasks: nobody cannot reach it (${parent} is mode 0700, owner 0)`,
    );
  }, 120_000);

  it("refuses what would not isolate, before anything is created", () => {
    const parent = tempDataDir("isolation-refused");
    left.dirs.push(parent);
    const dataDir = join(parent, "data");
    const run = (args: string[], as?: number) =>
      spawnSync(process.execPath, [CLI, "--data-dir", dataDir, "up", "--http", "off", ...args], {
        encoding: "utf8",
        env: cliEnv({ CHRONOLOG_RUN_AS: "" }),
        timeout: 30_000,
        ...(as === undefined ? {} : { uid: as, gid: as }),
      });
    let r = run(["--pass-env", "NOT-A-NAME"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--pass-env "NOT-A-NAME": not a variable name');
    r = run(["--run-as", "no-such-user-here"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--run-as no-such-user-here: no such user on this host");
    r = run(["--task-dir", join(dataDir, "tasks")]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("is inside the data directory");
    // The temporary parent is 0700: nobody cannot reach a task directory under it.
    r = run(["--task-dir", join(parent, "tasks")]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      `--task-dir ${join(parent, "tasks")}: nobody cannot reach it (${parent} is mode 0700`,
    );
    expect(existsSync(dataDir)).toBe(false);
    expect(existsSync(join(parent, "tasks"))).toBe(false);
    // Not root: another user is refused.
    const own = join(parent, "nobody");
    mkdirSync(own);
    chownSync(own, 65534, 65534);
    chmodSync(parent, 0o711);
    const asNobody = spawnSync(
      process.execPath,
      [CLI, "--data-dir", join(own, "data"), "up", "--http", "off", "--run-as", "root"],
      {
        encoding: "utf8",
        env: cliEnv({ CHRONOLOG_RUN_AS: "" }),
        uid: 65534,
        gid: 65534,
        cwd: own,
        timeout: 30_000,
      },
    );
    expect(asNobody.status).toBe(2);
    expect(asNobody.stderr).toContain(
      "--run-as root: running tasks as another user needs the scheduler to run as root (it runs as nobody)",
    );
  });
});
