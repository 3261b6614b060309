import { readFileSync } from "node:fs";

/**
 * Sends `sig` to one process a test started. Anything but a positive integer other than this
 * process's own pid is refused with an error: `process.kill(0, ...)` signals the caller's whole
 * process group (the test runner and whatever started it), and a pid file read between its
 * creation and its write reads as `Number("") === 0`.
 */
export function signalProcess(pid: number, sig: NodeJS.Signals): void {
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) {
    throw new Error(`refusing to send ${sig} to pid ${String(pid)}: not a process this test started`);
  }
  process.kill(pid, sig);
}

/** The pid a file holds once it is written whole (a positive integer), or undefined. */
export function readPid(file: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  if (!/^\d+\n?$/.test(text)) return undefined;
  const pid = Number(text);
  return pid > 1 ? pid : undefined;
}
