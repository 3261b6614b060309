/**
 * One scheduler per embedded log. Two schedulers on one data directory would each take the
 * other's workers for gone and fail its running attempts as lost, so `chronolog up` (and
 * `chronolog scheduler` on the embedded log) holds this lock for as long as it runs, and a
 * second one is refused at once with who holds it. Only schedulers take it: read and operator
 * commands write through the log's own transactions and work beside a running scheduler. A
 * Kafka log takes no lock: several schedulers share it on purpose, through their group.
 *
 * The lock is the kernel's, not a file's existence: an exclusive SQLite transaction (a POSIX
 * record lock) on `scheduler.lock`, held open until the process stops. The kernel drops it when
 * the process ends however it ends (SIGKILL included) and does not pass it to child processes,
 * so a dead holder leaves no stale lock to remove by hand, a recycled pid cannot look like the
 * holder, and of two starters racing only one gets it. `scheduler.lock.json` only says who holds
 * it (pid, host, since, and the process's start time, which tells a recycled pid apart when it
 * is read); it is written once the lock is held, atomically, and is never what decides.
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { StateError } from "@chronolog/scheduler";
import Database from "better-sqlite3";
import {
  HOLDER_FILE,
  holderAlive,
  type LockHolder,
  processStartTime,
  readHolder,
} from "./scheduler-holder.js";
import { sleepSync } from "./sleep-sync.js";

export interface SchedulerLock {
  readonly holder: LockHolder;
  /** Lets the lock go (the holder record first, so a new holder's is never removed). */
  release(): void;
}

/**
 * The connections holding locks. A connection nothing refers to is closed when it is collected,
 * which would let the lock go while the scheduler still runs: this keeps each until `release`.
 */
const held = new Set<Database.Database>();

/** How long a starter waits on a lock being taken or let go at that very moment. */
const CONTENTION_MS = 250;

function sameHolder(a: LockHolder | null, b: LockHolder): boolean {
  return a !== null && a.pid === b.pid && a.host === b.host && a.startTime === b.startTime;
}

/** The holder as recorded, waiting briefly while a new holder has not written itself down yet. */
function recordedHolder(path: string): LockHolder | null {
  const deadline = Date.now() + 1_000;
  for (;;) {
    const h = readHolder(path);
    if ((h && holderAlive(h)) || Date.now() > deadline) return h;
    sleepSync(20);
  }
}

/**
 * Takes the data directory's scheduler lock, or throws a StateError naming the live process
 * that holds it.
 */
export function acquireSchedulerLock(dataDir: string): SchedulerLock {
  return acquireLock(
    dataDir,
    {},
    (who) => `the data directory ${dataDir} is being scheduled by ${who}; stop it first`,
  );
}

/**
 * Takes the task directory's lock for the process whose directory `owner` names ("data directory
 * /srv/chronolog", "worker directory /srv/worker"), or throws a StateError naming the live
 * process (and its directory) that holds it. Each start of a scheduler or a worker removes what
 * killed attempts left in the task directory's staging: a second one sharing it would remove the
 * first one's attempts' staging as they run.
 */
export function acquireTaskDirLock(taskDir: string, owner: string): SchedulerLock {
  return acquireLock(taskDir, { owner }, (who, holder) => {
    const of = holder?.owner ? ` (${holder.owner})` : "";
    return `the task directory ${taskDir} is in use by ${who}${of}: each data or worker directory needs a task directory of its own (--task-dir)`;
  });
}

/**
 * A scheduler's locks on the embedded log: its data directory's, then its task directory's
 * (released together, the task directory's first).
 */
export function acquireSchedulerLocks(dataDir: string, taskDir: string): SchedulerLock {
  const data = acquireSchedulerLock(dataDir);
  let tasks: SchedulerLock;
  try {
    tasks = acquireTaskDirLock(taskDir, `data directory ${dataDir}`);
  } catch (error) {
    data.release();
    throw error;
  }
  return {
    holder: data.holder,
    release() {
      tasks.release();
      data.release();
    },
  };
}

/** The lock of `dir` (see above), the holder's record carrying `extra`. */
function acquireLock(
  dir: string,
  extra: { readonly owner?: string },
  refusal: (who: string, holder: LockHolder | null) => string,
): SchedulerLock {
  const lockPath = join(dir, "scheduler.lock");
  const holderPath = join(dir, HOLDER_FILE);
  // The busy timeout covers two starters meeting half-way; a lock that stays held fails fast.
  let db: Database.Database;
  try {
    db = new Database(lockPath, { timeout: CONTENTION_MS });
  } catch (error) {
    throw new StateError(`cannot take the lock ${lockPath}: ${(error as Error).message}`);
  }
  // A file it may not write is opened read-only, where a lock excludes no one: refused.
  if (db.readonly) {
    db.close();
    throw new StateError(`cannot take the lock ${lockPath}: this user may not write it`);
  }
  try {
    db.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== "SQLITE_BUSY") throw error;
    const h = recordedHolder(holderPath);
    const alive = h && holderAlive(h) ? h : null;
    const who = alive ? `pid ${alive.pid} on host ${alive.host} since ${alive.since}` : "another process";
    throw new StateError(refusal(who, alive));
  }
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    since: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    startTime: processStartTime(process.pid),
    ...extra,
  };
  const tmp = `${holderPath}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(holder)}\n`, { mode: 0o600 });
  renameSync(tmp, holderPath);
  held.add(db);
  return {
    holder,
    release() {
      if (!held.delete(db)) return;
      if (sameHolder(readHolder(holderPath), holder)) rmSync(holderPath, { force: true });
      db.close();
    },
  };
}
