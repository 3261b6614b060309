import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { isEnvName, removeWorkDirs } from "@chronolog/worker";
import { CliError } from "./edge.js";
import type { Logger } from "./logger.js";

/** How the local workers run tasks (see `up --run-as`, `--pass-env`, `--task-dir`). */
export interface TaskIsolation {
  /** The user tasks run as; undefined: the scheduler's own. */
  readonly runAs?: { readonly name: string; readonly uid: number; readonly gid: number };
  /** The scheduler's own user, as `id -un` says. */
  readonly ownUser: string;
  /** Where attempts get their working directories (`work/`) and staging directories (`staging/`). */
  readonly taskDir: string;
  /**
   * Set when `taskDir` is not the default beside the data directory because the run-as user
   * cannot reach that one: the default, and the directory on its way that stops the user.
   */
  readonly unreachableDefault?: {
    readonly taskDir: string;
    readonly blockedAt: string;
    readonly mode: number;
  };
  readonly passEnv: readonly string[];
}

export interface IsolationOptions {
  runAs?: string;
  passEnv: string[];
  taskDir?: string;
}

/** The default directory of the tasks' directories: beside the data directory, not in it. */
export function defaultTaskDir(dataDir: string): string {
  return `${resolve(dataDir)}-tasks`;
}

function idOf(flag: "-u" | "-g" | "-un", user?: string): string | undefined {
  const r = spawnSync("id", user === undefined ? [flag] : [flag, user], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** `name`, `uid` or `uid:gid` -> the user's name, uid and gid. */
function lookUpUser(spec: string): { name: string; uid: number; gid: number } {
  const pair = /^(\d+):(\d+)$/.exec(spec);
  if (pair) return { name: spec, uid: Number(pair[1]), gid: Number(pair[2]) };
  if (!/^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?$/.test(spec))
    throw new CliError(`--run-as "${spec}": expected a user name, a uid or uid:gid`, 2);
  const uid = idOf("-u", spec);
  const gid = idOf("-g", spec);
  if (uid === undefined || gid === undefined)
    throw new CliError(
      `--run-as ${spec}: no such user on this host (give uid:gid for a user without a name)`,
      2,
    );
  return {
    name: /^\d+$/.test(spec) ? (idOf("-un", spec) ?? spec) : spec,
    uid: Number(uid),
    gid: Number(gid),
  };
}

/** Whether `user` may search (traverse) the directory with this stat. */
function canTraverse(
  st: { mode: number; uid: number; gid: number },
  user: { uid: number; gid: number },
): boolean {
  if (user.uid === 0) return true;
  if (st.uid === user.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === user.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** The first directory on the way to `taskDir` that `user` may not search, if any. */
function blockedOn(
  taskDir: string,
  user: { uid: number; gid: number },
): { dir: string; mode: number; uid: number } | undefined {
  for (let dir = dirname(taskDir); ; dir = dirname(dir)) {
    if (existsSync(dir)) {
      const st = statSync(dir);
      if (!canTraverse(st, user)) return { dir, mode: st.mode & 0o777, uid: st.uid };
    }
    if (dir === dirname(dir)) return undefined;
  }
}

const octal = (mode: number) => mode.toString(8).padStart(4, "0");

/** Where the tasks of a data directory whose default task directory is out of reach go. */
export const FALLBACK_TASK_ROOT = "/var/lib/chronolog";

/**
 * Where tasks get their directories when the default beside the data directory is out of the
 * run-as user's reach (a checkout under a home of mode 0700, say) and no `--task-dir` was given:
 * `FALLBACK_TASK_ROOT/tasks-<hash of the data directory>` (so the same one at every start), made
 * 0711 if missing. Only where no other user can put anything on the way to it: every directory
 * from the root down must be the scheduler's own user's (root's) and writable by no one else,
 * so the tasks' files never land where another user could swap a directory for a link, or
 * squat the name first. Undefined when it cannot be so.
 */
function fallbackTaskDir(data: string): string | undefined {
  const own = process.getuid?.() ?? -1;
  const safe = (path: string): boolean => {
    const st = lstatSync(path, { throwIfNoEntry: false });
    return st?.isDirectory() === true && st.uid === own && (st.mode & 0o022) === 0;
  };
  const name = createHash("sha256").update(data).digest("hex").slice(0, 16);
  const dir = join(FALLBACK_TASK_ROOT, `tasks-${name}`);
  for (let up = dirname(FALLBACK_TASK_ROOT); ; up = dirname(up)) {
    if (!safe(up)) return undefined;
    if (up === dirname(up)) break;
  }
  for (const path of [FALLBACK_TASK_ROOT, dir]) {
    try {
      mkdirSync(path, { mode: 0o711 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
    }
    if (!safe(path)) return undefined;
    chmodSync(path, 0o711);
  }
  return dir;
}

/**
 * Creates what is missing of `taskDir` and its `staging/` and `work/`, each reachable but not
 * listable by others (0711); the directories above it that exist already are left as they are.
 */
function makeRoots(taskDir: string): void {
  const missing: string[] = [];
  for (let dir = taskDir; !existsSync(dir); dir = dirname(dir)) missing.unshift(dir);
  for (const dir of [...missing, join(taskDir, "staging"), join(taskDir, "work")]) {
    mkdirSync(dir, { recursive: true, mode: 0o711 });
    chmodSync(dir, 0o711);
  }
}

/**
 * Decides how tasks run: as `--run-as` (default `nobody` when the scheduler is root, else the
 * scheduler's own user), with the variables `--pass-env` names, in directories under
 * `--task-dir` (default beside the data directory). Creates the task directory; refuses a run-as
 * user other than the scheduler's own without root, a task directory inside the data directory,
 * and one the run-as user cannot reach.
 */
export function resolveIsolation(opts: IsolationOptions, dataDir: string): TaskIsolation {
  const ownUid = process.getuid?.() ?? -1;
  const ownUser = idOf("-un") ?? String(ownUid);
  for (const name of opts.passEnv)
    if (!isEnvName(name)) throw new CliError(`--pass-env "${name}": not a variable name`, 2);
  const spec = opts.runAs ?? (ownUid === 0 ? "nobody" : undefined);
  let runAs: TaskIsolation["runAs"];
  if (spec !== undefined) {
    const user = lookUpUser(spec);
    if (user.uid !== ownUid || user.gid !== (process.getgid?.() ?? -1)) {
      if (ownUid !== 0)
        throw new CliError(
          `--run-as ${spec}: running tasks as another user needs the scheduler to run as root (it runs as ${ownUser})`,
          2,
        );
      runAs = user;
    }
  }
  const data = resolve(dataDir);
  let taskDir = resolve(opts.taskDir ?? defaultTaskDir(data));
  const inside = relative(data, taskDir);
  if (inside === "" || (!inside.startsWith("..") && !inside.startsWith(sep)))
    throw new CliError(
      `--task-dir ${taskDir} is inside the data directory ${data}, which tasks must not reach: choose a directory outside it`,
      2,
    );
  let unreachableDefault: TaskIsolation["unreachableDefault"];
  if (runAs) {
    // Every directory above it that exists must let the task's user through (what is missing
    // is created so that it does). The default out of reach, the tasks get one under
    // FALLBACK_TASK_ROOT instead where it can be made safely, and the start-up line says so.
    let blocked = blockedOn(taskDir, runAs);
    const away = blocked && opts.taskDir === undefined ? fallbackTaskDir(data) : undefined;
    if (blocked && away !== undefined && !blockedOn(join(away, "x"), runAs)) {
      unreachableDefault = { taskDir, blockedAt: blocked.dir, mode: blocked.mode };
      taskDir = away;
      blocked = undefined;
    }
    if (blocked)
      throw new CliError(
        `--task-dir ${taskDir}: ${runAs.name} cannot reach it (${blocked.dir} is mode ${octal(blocked.mode)}, owner ${blocked.uid}): choose a directory ${runAs.name} can reach, or let it through ${blocked.dir} (chmod o+x)`,
        2,
      );
  }
  makeRoots(taskDir);
  return {
    ...(runAs ? { runAs } : {}),
    ownUser,
    taskDir,
    ...(unreachableDefault ? { unreachableDefault } : {}),
    passEnv: [...opts.passEnv],
  };
}

/** The start-up line saying what isolation tasks get, and what they do not. */
export function isolationNotice(iso: TaskIsolation): {
  level: "info" | "warn";
  message: string;
  fields: Record<string, unknown>;
} {
  const fields = {
    runAs: iso.runAs ? `${iso.runAs.name} (${iso.runAs.uid}:${iso.runAs.gid})` : iso.ownUser,
    taskDir: iso.taskDir,
    passEnv: iso.passEnv,
  };
  const away = iso.unreachableDefault;
  if (iso.runAs)
    return {
      level: "info",
      message: `tasks run as ${iso.runAs.name}: they cannot read or write the data directory, see the scheduler's environment or signal its processes${away ? `; their directories are under ${iso.taskDir}, since ${iso.runAs.name} cannot reach ${away.taskDir} (${away.blockedAt} is mode ${octal(away.mode)}): --task-dir chooses another` : ""}`,
      fields,
    };
  if (iso.ownUser === "root" || process.getuid?.() === 0)
    return {
      level: "warn",
      message:
        "tasks run as root, the scheduler's own user: they get a clean environment and directories of their own, and nothing else keeps them from the data directory or the scheduler",
      fields,
    };
  return {
    level: "warn",
    message: `tasks run as ${iso.ownUser}, the scheduler's own user: they get a clean environment and directories of their own, but can read and write the data directory and reach the scheduler's processes; start the scheduler as root with --run-as USER to keep them out`,
    fields,
  };
}

/**
 * Removes the working directories that attempts killed with their worker processes left under
 * the task directory (`up` and `chronolog worker`, as they start), warning of any it could not:
 * how many it removed.
 */
export function removeLeftWorkDirs(iso: TaskIsolation, logger: Logger): number {
  const under = join(iso.taskDir, "work");
  const work = removeWorkDirs(under);
  if (work.kept > 0)
    logger.warn(
      { workDirs: work.kept, under },
      "could not remove working directories killed attempts left behind",
    );
  return work.removed;
}
