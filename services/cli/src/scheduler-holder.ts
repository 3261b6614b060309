/**
 * Who schedules a data directory, as the holder of its scheduler lock recorded it (see
 * scheduler-lock.ts), read without the lock and without the scheduler's code: a read command
 * asks it to say that nothing is scheduled.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

/** The holder's record in the data directory. */
export const HOLDER_FILE = "scheduler.lock.json";

/** Who holds the lock, as its holder recorded it. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** ISO instant the holder took the lock. */
  readonly since: string;
  /** The holder's start time in clock ticks after boot (/proc/PID/stat), null where unknown. */
  readonly startTime: string | null;
  /** A task directory's holder: its own directory, in words ("data directory /srv/chronolog"). */
  readonly owner?: string;
}

/** A process's start time from /proc/PID/stat (field 22), or null off Linux or if it is gone. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the recorded holder is (still) the live process it names, as far as this host can tell. */
export function holderAlive(h: LockHolder): boolean {
  if (h.host !== hostname()) return true;
  // (A start time this process may not read, /proc hiding others' processes, says nothing.)
  const started = h.startTime !== null ? processStartTime(h.pid) : null;
  if (started !== null) return started === h.startTime;
  try {
    process.kill(h.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function readHolder(path: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(path, "utf8")) as LockHolder;
    return typeof h.pid === "number" && typeof h.host === "string" && typeof h.since === "string" ? h : null;
  } catch {
    return null;
  }
}

/**
 * The live process that schedules `dataDir`, if any, as its record says: none when there is no
 * record (no scheduler, or one stopped) or the process it names on this host is gone (killed).
 */
export function schedulerHolder(dataDir: string): LockHolder | null {
  const h = readHolder(join(dataDir, HOLDER_FILE));
  return h && holderAlive(h) ? h : null;
}
