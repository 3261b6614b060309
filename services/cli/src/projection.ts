import {
  formatTaskKey,
  instantInput,
  parseTaskKey,
  type SchedulerProjection,
  ValidationError,
} from "@chronolog/core";
import { type EventLog, positionAsOf } from "@chronolog/log";
import {
  answerAtHead,
  firstIdsAfter,
  loadProjection,
  projectionAsOf,
  type ReadView,
} from "@chronolog/scheduler";
import type { Command } from "commander";
import { type DataDirOptions, dataDirOf, defaultActor, openLogForRead, openLogForWrite } from "./data-dir.js";
import { CliError } from "./edge.js";

export interface Session {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
}

/**
 * Opens the log and builds the projection from the latest snapshot plus the log's tail. Works
 * beside a running `chronolog up`: SQLite lets readers and writers share the file.
 */
export async function withSession<T>(
  options: DataDirOptions,
  mode: "read" | "write",
  fn: (s: Session) => Promise<T>,
): Promise<T> {
  const log =
    mode === "write" ? await openLogForWrite(options, defaultActor("cli")) : await openLogForRead(options);
  try {
    const { projection } = await loadProjection(log, dataDirOf(options), {
      fromScratch: options.file !== undefined,
    });
    return await fn({ log, projection });
  } finally {
    await log.close();
  }
}

/** `--at POSITION` or `--as-of INSTANT`, on every command that reads state. */
export interface AsOfFlags {
  at?: string;
  asOf?: string;
}

export function addAsOfOptions(command: Command): Command {
  return command
    .option("--at <position>", "the state as it was right after the event at this log position")
    .option(
      "--as-of <instant>",
      "the state as it was at this instant (the last event recorded at or before it)",
    );
}

/** A read session, at the head or as of a position, with the instant its answers are as of. */
export interface ReadSession extends Session {
  /** The time `why` reasons at: now, or when the event at the position was recorded. */
  readonly now: number;
  /** The position it is as of (null: the head, as it moves). */
  readonly at: bigint | null;
}

/**
 * A read session at the head, or with `--at`/`--as-of` the state as of that position: the
 * projection folded from the nearest snapshot of the ladder at or below it, and a log that
 * shows nothing after it. Says on stderr which position and hash it is as of.
 */
export async function withReadSession<T>(
  options: DataDirOptions,
  flags: AsOfFlags,
  fn: (s: ReadSession) => Promise<T>,
): Promise<T> {
  if (flags.at === undefined && flags.asOf === undefined)
    return withSession(options, "read", (s) => fn({ ...s, now: Date.now(), at: null }));
  if (flags.at !== undefined && flags.asOf !== undefined)
    throw new ValidationError("--at", [{ path: "", message: "give --at or --as-of, not both" }]);
  const log = await openLogForRead(options);
  try {
    const head = await log.headPosition();
    let position: bigint;
    if (flags.at !== undefined) {
      if (!/^\d+$/.test(flags.at))
        throw new ValidationError("--at", [
          { path: "", message: `"${flags.at}" is not a log position (0 or more)` },
        ]);
      position = BigInt(flags.at);
      if (position > head)
        throw new ValidationError("--at", [
          { path: "", message: `position ${position} is past the log's head (${head})` },
        ]);
    } else {
      const instant = instantInput(flags.asOf as string, "--as-of");
      position = await positionAsOf(log, new Date(instant));
      if (position < 0n)
        throw new ValidationError("--as-of", [
          { path: "", message: `the log has no event recorded at or before ${instant}` },
        ]);
    }
    // An export stands alone: no snapshot of the data directory is folded from.
    const asOf = await projectionAsOf(log, options.file !== undefined ? null : dataDirOf(options), position);
    for (const d of asOf.discarded) process.stderr.write(`chronolog: not used: ${d}\n`);
    process.stderr.write(
      `as of position ${asOf.position} (hash ${asOf.event?.hash ?? "-"}, recorded ${asOf.event?.recordedAt ?? "-"})\n`,
    );
    const now = asOf.event ? Date.parse(asOf.event.recordedAt) : Date.now();
    return await fn({ log: asOf.log, projection: asOf.projection, now, at: asOf.position });
  } finally {
    await log.close();
  }
}

/** What a read's answer is computed from: the projection, the log, the instant it is as of. */
export interface AnswerView extends ReadView {
  readonly log: EventLog;
  readonly now: number;
}

/**
 * A read of a few tasks (`why`, `task`, a page of `tasks`): at the head, answered from the
 * checkpoint's index, decoding only the tasks the answer looks at (see `answerAtHead`: `ask`
 * may run several times, so it computes the answer and prints nothing); with `--at`/`--as-of`,
 * or from an export, from the whole projection as of then. The answer is the same either way.
 */
export async function withReadAnswer<T>(
  options: DataDirOptions,
  flags: AsOfFlags,
  ask: (view: AnswerView) => T | Promise<T>,
): Promise<T> {
  if (flags.at !== undefined || flags.asOf !== undefined || options.file !== undefined)
    return withReadSession(options, flags, async (s) =>
      ask({
        ...s,
        idsAfter: (after, count) => firstIdsAfter(s.projection.tasks.keys(), after, count),
      }),
    );
  const log = await openLogForRead(options);
  try {
    const now = Date.now();
    const read = await answerAtHead(log, dataDirOf(options), (view) => ask({ ...view, log, now }));
    return read.answer;
  } finally {
    await log.close();
  }
}

/** Accepts `project/account/name[/partition]`. */
export function taskIdArg(text: string): string {
  const parsed = parseTaskKey(text);
  if (!parsed.ok) throw new CliError(parsed.error, 2);
  return formatTaskKey(parsed.key);
}
