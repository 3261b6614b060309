import { formatTaskKey, parseTaskKey, type SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { loadProjection } from "@chronolog/scheduler";
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

/** Accepts `project/account/name[/partition]`. */
export function taskIdArg(text: string): string {
  const parsed = parseTaskKey(text);
  if (!parsed.ok) throw new CliError(parsed.error, 2);
  return formatTaskKey(parsed.key);
}
