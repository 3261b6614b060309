import { readdirSync, rmSync } from "node:fs";
import { chmod, chown, mkdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";

/**
 * What a task runs as and what it is given: the user and group its processes take, the
 * directory under which each attempt gets a working directory of its own, and which of the
 * worker's environment variables it sees. A worker process is configured once, from its
 * environment (see main.ts); nothing here is the task's to change.
 */
export interface TaskSandbox {
  /** The uid and gid task processes run as; undefined: the worker's own. */
  readonly identity?: { readonly uid: number; readonly gid: number };
  /**
   * Each attempt that runs a shell or node task gets `<workRoot>/<token>/`, owned by the task's
   * user, as its HOME and (unless its operator names a cwd) its working directory; removed when
   * the attempt ends. Undefined: the task keeps the worker's HOME and working directory.
   */
  readonly workRoot?: string;
  /** Names of the worker's environment variables a task also gets, beyond the allowlist. */
  readonly passEnv: readonly string[];
}

let current: TaskSandbox = { passEnv: [] };

/** Sets how this process runs tasks (a worker process, once, at its start). */
export function configureTasks(sandbox: TaskSandbox): void {
  current = { ...sandbox, passEnv: [...sandbox.passEnv] };
}

export function taskSandbox(): TaskSandbox {
  return current;
}

/** The worker's variables every task gets (when the worker has them): the command path and the locale. */
const ALLOWED = new Set(["PATH", "LANG", "LANGUAGE", "TZ"]);
const ALLOWED_PREFIX = "LC_";

/** Whether a name is one a task may be given by `--pass-env`. */
export function isEnvName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}

/**
 * The environment a task starts from: the allowlist (PATH, LANG, LANGUAGE, TZ, LC_*) and the
 * variables passed on purpose, from the worker's environment as it is now; HOME is the
 * attempt's working directory when it has one (else the worker's). Nothing else of the
 * worker's (and so the scheduler's) environment: the operator's env, the run's variables and
 * the CHRONOLOG_* variables of the attempt are added over it by the operator.
 */
export function taskBaseEnv(workDir?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (ALLOWED.has(k) || k.startsWith(ALLOWED_PREFIX)) env[k] = v;
  }
  for (const k of current.passEnv) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  if (workDir !== undefined) env.HOME = workDir;
  else if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  return env;
}

/** The `uid`/`gid` spawn options of a task's process (none when it runs as the worker's user). */
export function spawnIdentity(): { uid?: number; gid?: number } {
  const id = current.identity;
  return id ? { uid: id.uid, gid: id.gid } : {};
}

/** Gives a directory the worker made to the task's user (mode 0700), when tasks run as another. */
export async function handOver(dir: string): Promise<void> {
  const id = current.identity;
  if (id) await chown(dir, id.uid, id.gid);
  await chmod(dir, 0o700);
}

/**
 * A directory whose entries the task's user may reach by name but not list (0711): the
 * attempts' directories under it are not found by looking.
 */
export async function makeRoot(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o711 });
  await chmod(dir, 0o711);
}

/**
 * Removes every attempt's working directory under `workRoot`, with what its task left in it:
 * called as a scheduler or worker starts, holding its task directory's lock, when no attempt of
 * an earlier process can still run there (an attempt's own is removed as it ends; a process
 * killed leaves its attempts' behind). Returns how many went, and how many could not (a task
 * that took its own directory's permissions away, on a scheduler that does not run as root).
 */
export function removeWorkDirs(workRoot: string): { removed: number; kept: number } {
  let names: string[];
  try {
    names = readdirSync(workRoot);
  } catch {
    return { removed: 0, kept: 0 };
  }
  let removed = 0;
  let kept = 0;
  for (const name of names) {
    try {
      rmSync(join(workRoot, name), { recursive: true, force: true });
      removed += 1;
    } catch {
      kept += 1;
    }
  }
  return { removed, kept };
}

/** `<workRoot>/<token>`, the token made safe as one path segment. */
export function workDirFor(workRoot: string, token: string): string {
  let name = token.replace(/[^A-Za-z0-9._-]/g, "_");
  if (name === "" || name === "." || name === "..") name = `t_${name}`;
  return join(resolve(workRoot), name);
}

/** Creates the attempt's empty working directory, owned by the task's user; undefined without a work root. */
export async function prepareWorkDir(token: string): Promise<string | undefined> {
  const root = current.workRoot;
  if (root === undefined) return undefined;
  await makeRoot(root);
  const dir = workDirFor(root, token);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { mode: 0o700 });
  await handOver(dir);
  return dir;
}

/** Removes an attempt's working directory and all it holds. */
export async function removeWorkDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch(() => {});
}
