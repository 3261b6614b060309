import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { CliError } from "./edge.js";

export const DEFAULT_DATA_DIR = "./.chronolog";

export interface DataDirOptions {
  readonly dataDir?: string;
}

export function dataDirOf(options: DataDirOptions): string {
  return resolve(options.dataDir ?? process.env.CHRONOLOG_DATA_DIR ?? DEFAULT_DATA_DIR);
}

export function logFileOf(options: DataDirOptions): string {
  return join(dataDirOf(options), "log.db");
}

export function defaultActor(role: string): string {
  return `${role}:${process.env.USER ?? "user"}@${hostname()}:${process.pid}`;
}

/** Opens the log for writing (created if missing). */
export function openLogForWrite(options: DataDirOptions, actor: string): EventLog {
  return openSqliteLog({ path: logFileOf(options), actor });
}

/** Opens the log for reading only; a missing log is a clear error, not an empty one. */
export function openLogForRead(options: DataDirOptions): EventLog {
  const path = logFileOf(options);
  if (!existsSync(path)) {
    throw new CliError(
      `no log at ${path} (nothing written yet; pass --data-dir to use another directory)`,
      2,
    );
  }
  return openSqliteLog({ path, readonly: true, actor: "reader" });
}
