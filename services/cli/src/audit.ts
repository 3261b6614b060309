import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import type { EventLog, StoredEvent } from "@chronolog/log";
import { CliError } from "./edge.js";

/** What an auditor kept of the log: the event at `position` had `hash`. */
export interface Expectation {
  readonly position: bigint;
  readonly hash: string;
  /** Where it came from: `--expect`, or `FILE line N`. */
  readonly source: string;
}

export interface ExpectationOutcome extends Expectation {
  readonly ok: boolean;
  /** Why it failed: `missing: ...` or `different hash: ...`; null when it holds. */
  readonly reason: string | null;
}

const HASH = /^[0-9a-fA-F]{64}$/;

/** `--expect POSITION:HASH`. */
export function parseExpect(text: string): Expectation {
  const m = /^(\d+):([^:]*)$/.exec(text);
  if (!m || !HASH.test(m[2] as string))
    throw new CliError(`--expect "${text}": expected POSITION:HASH (a position, a colon, 64 hex digits)`, 2);
  return { position: BigInt(m[1] as string), hash: (m[2] as string).toLowerCase(), source: "--expect" };
}

/** One anchor line: `POSITION HASH TIME`, TIME in ISO 8601 (UTC). */
export function anchorLine(e: StoredEvent, at: Date): string {
  return `${e.position} ${e.metadata.hash} ${at.toISOString()}`;
}

/** Every line of an anchor file (blank lines skipped); a malformed one is exit 2, naming it. */
export function readAnchors(path: string): Expectation[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(`--anchors ${path}: ${(error as Error).message}`, 2);
  }
  const out: Expectation[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    const m = /^(\d+) ([0-9a-f]{64}) (\S+)$/.exec(line);
    if (!m || Number.isNaN(Date.parse(m[3] as string)))
      throw new CliError(
        `--anchors ${path} line ${i + 1}: expected "POSITION HASH TIME" (a position, 64 hex digits, an ISO time), found ${JSON.stringify(line)}`,
        2,
      );
    out.push({ position: BigInt(m[1] as string), hash: m[2] as string, source: `${path} line ${i + 1}` });
  });
  return out;
}

/** The log's last event, or null for an empty log. */
export async function headEvent(log: EventLog): Promise<StoredEvent | null> {
  const head = await log.headPosition();
  if (head < 0n) return null;
  const [e] = await log.readAllStored({ fromPosition: head, maxCount: 1 });
  return e && e.position === head ? e : null;
}

/** Appends one anchor line for the log's head to `path`, on disk before it returns. */
export async function writeAnchor(log: EventLog, path: string, now = new Date()): Promise<string | null> {
  const head = await headEvent(log);
  if (!head) return null;
  const line = anchorLine(head, now);
  const fd = openSync(path, "a");
  try {
    writeSync(fd, `${line}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return line;
}

/** Where the events to check expectations against are: the event at a position, and the extent. */
export interface Holdings {
  readonly at: (position: bigint) => Promise<StoredEvent | null>;
  /** The first and last positions held (first is null for the log itself: it starts at its start). */
  readonly first: bigint | null;
  readonly last: bigint;
  /** `the log` or `the export`. */
  readonly what: string;
}

/** Whether each expectation holds: the event at its position is there, with its hash. */
export async function checkExpectations(
  expectations: readonly Expectation[],
  held: Holdings,
): Promise<ExpectationOutcome[]> {
  const out: ExpectationOutcome[] = [];
  for (const x of expectations) {
    const e = await held.at(x.position);
    let reason: string | null = null;
    if (!e) {
      const extent =
        held.first !== null && x.position < held.first
          ? `${held.what} starts at position ${held.first}`
          : held.last < 0n
            ? `${held.what} is empty`
            : `${held.what} ends at position ${held.last}`;
      reason = `missing: ${extent}`;
    } else if (e.metadata.hash !== x.hash)
      reason = `different hash: expected ${x.hash}, found ${e.metadata.hash}`;
    out.push({ ...x, ok: reason === null, reason });
  }
  return out;
}

/**
 * Appends an anchor line to `path` every `everyMs` while the scheduler runs. A write that fails
 * is logged and the scheduler goes on; `stop` waits for a write under way, then writes one more.
 */
export function startAnchoring(
  log: EventLog,
  path: string,
  everyMs: number,
  logger: { error(fields: object, message: string): void; info(fields: object, message: string): void },
): { stop: () => Promise<void> } {
  let writing: Promise<void> = Promise.resolve();
  const write = () => {
    writing = writing.then(() =>
      writeAnchor(log, path).then(
        (line) => {
          if (line) logger.info({ anchor: line, file: path }, "anchored the log's head");
        },
        (error: unknown) => logger.error({ err: error, file: path }, "could not write an anchor"),
      ),
    );
    return writing;
  };
  const timer = setInterval(write, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await write();
    },
  };
}
