import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join, resolve } from "node:path";
import { EventLog, ExportBackend, ExportLineError, LogReadOnlyError } from "@chronolog/log";
import type { KafkaSecurityOptions } from "@chronolog/log-kafka";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { CliError } from "./edge.js";

export const DEFAULT_DATA_DIR = "./.chronolog";

export interface DataDirOptions {
  readonly dataDir?: string;
  /**
   * Where the log lives: the embedded file in the data directory (default),
   * `kafka://HOST:PORT[,HOST:PORT]/TOPIC` (`kafka+ssl://` for TLS) or
   * `esdb://HOST:PORT[/STREAM][?tls=false&...]`.
   */
  readonly log?: string;
  /** Read the log from this export (`log export`), read-only, instead of the live log. */
  readonly file?: string;
}

export function dataDirOf(options: DataDirOptions): string {
  return resolve(options.dataDir ?? process.env.CHRONOLOG_DATA_DIR ?? DEFAULT_DATA_DIR);
}

/** The umask this process started with, before `restrictUmask` (what tasks start with). */
let startUmask: number | undefined;

/**
 * Makes everything this process creates from now on readable by its own user alone (umask
 * 077): the log, its WAL, checkpoints, output files, exports. Returns the umask it started with.
 */
export function restrictUmask(): number {
  startUmask ??= process.umask(0o077);
  return startUmask;
}

/** The umask this process started with (tasks start with it), or its current one. */
export function originalUmask(): number {
  if (startUmask !== undefined) return startUmask;
  const now = process.umask(0o022);
  process.umask(now);
  return now;
}

/**
 * Creates the data directory if missing and takes from it, and from everything in it, every
 * permission of others than its owner: the directory and its subdirectories become 0700 (or
 * less), its files 0600 (or less). Symbolic links are not followed. Returns how many entries
 * were tightened.
 */
export function secureDataDir(dir: string): number {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let tightened = 0;
  const tighten = (path: string): void => {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(path);
    } catch {
      return; // gone meanwhile
    }
    if (st.isSymbolicLink()) return;
    if ((st.mode & 0o077) !== 0) {
      chmodSync(path, st.mode & 0o700);
      tightened += 1;
    }
    if (!st.isDirectory()) return;
    for (const name of readdirSync(path)) tighten(join(path, name));
  };
  tighten(dir);
  return tightened;
}

export function logFileOf(options: DataDirOptions): string {
  return join(dataDirOf(options), "log.db");
}

let account: string | undefined;

/**
 * The account the process runs as, by its user id (not `$USER`, which whoever starts it sets):
 * `uid<N>` for an id the system has no name for (a container's, say).
 */
function accountName(): string {
  if (account === undefined) {
    try {
      account = userInfo().username;
    } catch {
      account = `uid${process.getuid?.() ?? "unknown"}`;
    }
  }
  return account;
}

/**
 * Who a process writes as: `role:user@host:pid`, the user its account. `$CHRONOLOG_HOST` names
 * the host where its own name says little (a container's random one, say).
 */
export function defaultActor(role: string): string {
  return `${role}:${accountName()}@${process.env.CHRONOLOG_HOST ?? hostname()}:${process.pid}`;
}

interface KafkaTarget {
  readonly kind: "kafka";
  readonly brokers: string;
  readonly topic: string;
  /** `kafka+ssl://`: TLS to every broker (its settings and SASL's come from the environment). */
  readonly tls: boolean;
}

interface EventStoreTarget {
  readonly kind: "esdb";
  /** The client's connection string, without the stream. */
  readonly connectionString: string;
  /** The EventStoreDB stream that holds the log (default `chronolog`). */
  readonly stream?: string;
}

export type LogTarget = KafkaTarget | EventStoreTarget;

const LOG_FORMS =
  "kafka://HOST:PORT[,HOST:PORT]/TOPIC, kafka+ssl://HOST:PORT[,HOST:PORT]/TOPIC, esdb://HOST:PORT[,HOST:PORT][/STREAM][?tls=false&...] or sqlite";

/**
 * A log URL fit for a message: a password in it (`//user:password@`, `password=` and the like
 * in the query) is replaced by `***`.
 */
export function redactLogUrl(url: string): string {
  return url
    .replace(
      /\/\/([^/@?#]*)@/,
      (_m, userinfo: string) => `//${userinfo.includes(":") ? `${userinfo.split(":")[0]}:***` : userinfo}@`,
    )
    .replace(/([?&][^=&#]*(?:pass|secret|token|key|credential)[^=&#]*=)[^&#]*/gi, "$1***");
}

/**
 * `kafka://127.0.0.1:19092,127.0.0.1:19093/chronolog` -> brokers and topic (`kafka+ssl://`:
 * the same over TLS); `esdb://127.0.0.1:2113/chronolog?tls=false` -> the client's connection
 * string and the stream (`esdb+discover://` too). Null for the embedded log.
 */
export function parseLogUrl(url: string): LogTarget | null {
  if (url === "sqlite" || url === "") return null;
  const scheme = /^(kafka(?:\+ssl)?):\/\//.exec(url);
  if (scheme) {
    const tls = scheme[1] === "kafka+ssl";
    const rest = url.slice(scheme[0].length);
    // Credentials have no place in the URL: it is shown in messages, process lists and logs.
    if (/^[^/]*@/.test(rest))
      throw new CliError(
        `--log "${redactLogUrl(url)}": a Kafka log URL takes no credentials; give them in CHRONOLOG_KAFKA_SASL_MECHANISM, CHRONOLOG_KAFKA_USERNAME and CHRONOLOG_KAFKA_PASSWORD_FILE (or CHRONOLOG_KAFKA_PASSWORD)`,
        2,
      );
    if (rest.includes("?"))
      throw new CliError(
        `--log "${redactLogUrl(url)}": a Kafka log URL takes no options; TLS is kafka+ssl://, and its settings and SASL's are CHRONOLOG_KAFKA_* variables`,
        2,
      );
    const kafka = /^([^/]+)\/([A-Za-z0-9._-]+)$/.exec(rest);
    if (kafka) return { kind: "kafka", brokers: kafka[1] as string, topic: kafka[2] as string, tls };
    throw new CliError(
      `--log "${redactLogUrl(url)}": expected ${scheme[1]}://HOST:PORT[,HOST:PORT]/TOPIC`,
      2,
    );
  }
  // The EventStoreDB client's own connection string, with the stream as an optional path.
  const esdb = /^(esdb(?:\+discover)?:\/\/)([^/?]+)(?:\/([^/?]*))?(\?.*)?$/.exec(url);
  if (esdb) {
    const stream = esdb[3] ? decodeURIComponent(esdb[3]) : undefined;
    if (stream?.startsWith("$"))
      throw new CliError(`--log "${redactLogUrl(url)}": ${stream} is a system stream`, 2);
    return {
      kind: "esdb",
      connectionString: `${esdb[1]}${esdb[2]}${esdb[4] ?? ""}`,
      ...(stream ? { stream } : {}),
    };
  }
  throw new CliError(`--log "${redactLogUrl(url)}": expected ${LOG_FORMS}`, 2);
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

/**
 * CHRONOLOG_KAFKA_RECORD_LAYOUT=2: the records a writer makes stay in the layout a client of
 * the version before checks reads, for a rolling upgrade (see KafkaLogOptions.recordLayout).
 */
function kafkaRecordLayout(): { recordLayout?: 2 | 3 } {
  const layout = process.env.CHRONOLOG_KAFKA_RECORD_LAYOUT;
  if (!layout) return {};
  if (layout !== "2" && layout !== "3")
    throw new CliError(`CHRONOLOG_KAFKA_RECORD_LAYOUT "${layout}": expected 2 or 3`, 2);
  return { recordLayout: layout === "2" ? 2 : 3 };
}

/**
 * How the Kafka client connects: plaintext for `kafka://`, TLS for `kafka+ssl://`, SASL if
 * CHRONOLOG_KAFKA_SASL_MECHANISM is set; the CA, client certificate and credentials come from
 * CHRONOLOG_KAFKA_* variables and files (see kafkaSecurityFromEnv). A setting that cannot be
 * used is exit 2, and its message names the variable, never a password.
 */
export async function kafkaConnectionOf(
  target: KafkaTarget,
): Promise<{ brokers: string; topic: string } & KafkaSecurityOptions> {
  const { kafkaSecurityFromEnv, KafkaSecurityError } = await import("@chronolog/log-kafka");
  try {
    return {
      brokers: target.brokers,
      topic: target.topic,
      ...kafkaSecurityFromEnv(process.env, { tls: target.tls }),
    };
  } catch (error) {
    if (error instanceof KafkaSecurityError) throw new CliError(error.message, 2);
    throw error;
  }
}

/** Where a Kafka client keeps checkpoints of its index of the topic, in the data directory. */
export function kafkaIndexPathOf(options: DataDirOptions, topic: string): string {
  return join(dataDirOf(options), "kafka", `${topic}.index`);
}

/** What a long-running process (the scheduler) asks of the log beside the defaults. */
export interface FollowOptions {
  /**
   * On a Kafka log: start from the checkpoint of the client's index in the data directory
   * and keep it written (see kafkaIndexPathOf); what the client says of it goes to `notice`.
   */
  readonly indexCheckpoints?: {
    readonly notice: (level: "info" | "warn", message: string, fields: Record<string, unknown>) => void;
  };
}

/** Opens the log for writing (the embedded file is created if missing). */
export async function openLogForWrite(
  options: DataDirOptions,
  actor: string,
  follow: FollowOptions = {},
): Promise<EventLog> {
  if (options.file !== undefined) throw new LogReadOnlyError(`the export ${options.file}`);
  const target = parseLogUrl(logUrlOf(options));
  // A network log's client loads only when that log is asked for.
  if (target?.kind === "kafka")
    return (await import("@chronolog/log-kafka")).openKafkaLog({
      ...(await kafkaConnectionOf(target)),
      actor,
      ...kafkaClientLog(),
      ...kafkaRecordLayout(),
      ...(follow.indexCheckpoints
        ? { indexPath: kafkaIndexPathOf(options, target.topic), notice: follow.indexCheckpoints.notice }
        : {}),
    });
  if (target?.kind === "esdb") return openEventStore(target, actor);
  const dir = dataDirOf(options);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A writer (`up` above all) holds the log open as long as it runs, and reads its file mostly
  // where it appends: a page cache of 8 MiB and no memory map, so that the pages it once read
  // (a map keeps them all, its cache up to 64 MiB) do not grow its resident memory with the
  // file. At 100,000 tasks this took 62 MB off the peak of `up` settling them, none at 10,000,
  // for no more CPU time measured (see docs/benchmarks.md). Readers keep the map: a read
  // command is short, and reads the file through it without copying its pages.
  return openSqliteLog({ path: logFileOf(options), actor, cacheMiB: 8, mmapMiB: 0 });
}

/** Opens the log for reading only; a missing embedded log is a clear error, not an empty one. */
export async function openLogForRead(options: DataDirOptions): Promise<EventLog> {
  if (options.file !== undefined) return openExport(options);
  const target = parseLogUrl(logUrlOf(options));
  if (target?.kind === "kafka")
    return (await import("@chronolog/log-kafka")).openKafkaLog({
      ...(await kafkaConnectionOf(target)),
      actor: "reader",
      createTopic: false,
    });
  if (target?.kind === "esdb") return openEventStore(target, "reader");
  const path = logFileOf(options);
  if (!existsSync(path)) {
    throw new CliError(
      `no log at ${path} (nothing written yet; pass --data-dir to use another directory)`,
      2,
    );
  }
  return openSqliteLog({ path, readonly: true, actor: "reader" });
}

/** The log in an EventStoreDB stream; the gRPC client loads only here. */
async function openEventStore(target: EventStoreTarget, actor: string): Promise<EventLog> {
  const { openEventStoreLog } = await import("@chronolog/log-eventstore");
  return openEventStoreLog({
    connectionString: target.connectionString,
    ...(target.stream ? { stream: target.stream } : {}),
    actor,
  });
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
