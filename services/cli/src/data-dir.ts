import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { EventLog, ExportBackend, ExportLineError, LogReadOnlyError } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { CliError } from "./edge.js";

export const DEFAULT_DATA_DIR = "./.chronolog";

export interface DataDirOptions {
  readonly dataDir?: string;
  /** Where the log lives: the embedded file in the data directory (default) or `kafka://HOST:PORT[,HOST:PORT]/TOPIC`. */
  readonly log?: string;
  /** Read the log from this export (`log export`), read-only, instead of the live log. */
  readonly file?: string;
}

export function dataDirOf(options: DataDirOptions): string {
  return resolve(options.dataDir ?? process.env.CHRONOLOG_DATA_DIR ?? DEFAULT_DATA_DIR);
}

export function logFileOf(options: DataDirOptions): string {
  return join(dataDirOf(options), "log.db");
}

/**
 * Who a process writes as: `role:user@host:pid`. `$CHRONOLOG_HOST` names the host where its own
 * name says little (a container's random one, say).
 */
export function defaultActor(role: string): string {
  return `${role}:${process.env.USER ?? "user"}@${process.env.CHRONOLOG_HOST ?? hostname()}:${process.pid}`;
}

interface KafkaTarget {
  readonly brokers: string;
  readonly topic: string;
}

/** `kafka://127.0.0.1:19092,127.0.0.1:19093/chronolog` -> brokers and topic. */
export function parseLogUrl(url: string): KafkaTarget | null {
  if (url === "sqlite" || url === "") return null;
  const m = /^kafka:\/\/([^/]+)\/([A-Za-z0-9._-]+)$/.exec(url);
  if (!m) throw new CliError(`--log "${url}": expected kafka://HOST:PORT[,HOST:PORT]/TOPIC or sqlite`, 2);
  return { brokers: m[1] as string, topic: m[2] as string };
}

export function logUrlOf(options: DataDirOptions): string {
  return options.log ?? process.env.CHRONOLOG_LOG ?? "sqlite";
}

/** CHRONOLOG_KAFKA_LOG_LEVEL=error|warn|info|debug: the Kafka client's own log lines, on stderr. */
function kafkaClientLog(): { logLevel?: "error" | "warn" | "info" | "debug" } {
  const level = process.env.CHRONOLOG_KAFKA_LOG_LEVEL;
  if (!level) return {};
  if (level !== "error" && level !== "warn" && level !== "info" && level !== "debug")
    throw new CliError(`CHRONOLOG_KAFKA_LOG_LEVEL "${level}": expected error, warn, info or debug`, 2);
  return { logLevel: level };
}

/** Opens the log for writing (the embedded file is created if missing). */
export async function openLogForWrite(options: DataDirOptions, actor: string): Promise<EventLog> {
  if (options.file !== undefined) throw new LogReadOnlyError(`the export ${options.file}`);
  const kafka = parseLogUrl(logUrlOf(options));
  // The Kafka client loads only when a Kafka log is asked for.
  if (kafka)
    return (await import("@chronolog/log-kafka")).openKafkaLog({ ...kafka, actor, ...kafkaClientLog() });
  return openSqliteLog({ path: logFileOf(options), actor });
}

/** Opens the log for reading only; a missing embedded log is a clear error, not an empty one. */
export async function openLogForRead(options: DataDirOptions): Promise<EventLog> {
  if (options.file !== undefined) return openExport(options);
  const kafka = parseLogUrl(logUrlOf(options));
  if (kafka)
    return (await import("@chronolog/log-kafka")).openKafkaLog({
      ...kafka,
      actor: "reader",
      createTopic: false,
    });
  const path = logFileOf(options);
  if (!existsSync(path)) {
    throw new CliError(
      `no log at ${path} (nothing written yet; pass --data-dir to use another directory)`,
      2,
    );
  }
  return openSqliteLog({ path, readonly: true, actor: "reader" });
}

/** The log held in an export file, read-only; a line not in the export's form is exit 5. */
function openExport(options: DataDirOptions): EventLog {
  const path = options.file as string;
  if (options.log !== undefined) throw new CliError("--file and --log: give one or the other", 2);
  if (!existsSync(path)) throw new CliError(`--file ${path}: no such file`, 2);
  try {
    return new EventLog(ExportBackend.fromFile(path), { actor: "reader" });
  } catch (error) {
    if (error instanceof ExportLineError)
      throw new CliError(`${path} ${error.message} (log verify --file ${path} checks the whole export)`, 5);
    throw error;
  }
}
