import { readFileSync } from "node:fs";
import type { ApiServer, ApiServerOptions, SchedulerHooks } from "@chronolog/api";
import { issueToken, readTokens, revokeToken } from "@chronolog/api/tokens";
import { EventSchemas } from "@chronolog/core";
import { type EventLog, verifyExportText } from "@chronolog/log";
import type { Command } from "commander";
import { byteSizeArg } from "../args.js";
import {
  type DataDirOptions,
  dataDirOf,
  defaultActor,
  openLogForRead,
  openLogForWrite,
} from "../data-dir.js";
import { CliError, toJson } from "../edge.js";
import { listing } from "../format.js";
import { createLogger } from "../logger.js";

/** The HTTP API's flags, on `up`, `scheduler` and `serve`. */
export interface HttpOptions {
  http: string;
  tlsCert?: string;
  tlsKey?: string;
  insecure?: boolean;
  publicRead?: boolean;
  bodyLimit: string;
  sseMaxLag: string;
  maxStreams: string;
  maxStreamsPerToken: string;
  asOfBuilds: string;
  allowHost: string[];
}

/** A flag's whole number, at least 1 (0 too with `zero`), or a usage error naming the flag. */
function countArg(text: string, flag: string, zero = false): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < (zero ? 0 : 1))
    throw new CliError(`${flag} takes a whole number ${zero ? "(0 or more)" : "above 0"}, not "${text}"`, 2);
  return n;
}

export function addHttpOptions(command: Command): Command {
  return command
    .option(
      "--http <host:port>",
      "serve the HTTP API here, or off (or $CHRONOLOG_HTTP)",
      process.env.CHRONOLOG_HTTP ?? "127.0.0.1:8080",
    )
    .option("--tls-cert <file>", "HTTP API: the certificate (PEM), with --tls-key, to serve HTTPS")
    .option("--tls-key <file>", "HTTP API: the certificate's private key (PEM)")
    .option("--insecure", "HTTP API: allow plain HTTP on an address other than loopback")
    .option("--public-read", "HTTP API: let requests without a token read (writes still need one)")
    .option("--body-limit <size>", "HTTP API: the largest request body (e.g. 1MiB)", "1MiB")
    .option(
      "--sse-max-lag <events>",
      "HTTP API: how far a live-event client may fall behind before it is dropped",
      "50000",
    )
    .option("--max-streams <n>", "HTTP API: most live streams open in all (more: 429)", "256")
    .option("--max-streams-per-token <n>", "HTTP API: most live streams open per token (more: 429)", "16")
    .option(
      "--as-of-builds <n>",
      "HTTP API: most ?at= views folded at once (4 times as many wait; more: 503)",
      "2",
    )
    .option(
      "--allow-host <name>",
      "HTTP API on loopback: another Host it answers to, beside localhost, 127.0.0.1, [::1] (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    );
}

/** The HTTP API's flags checked (refused with exit 2 when wrong), before anything starts. */
export function checkHttpOptions(opts: HttpOptions): {
  sseMaxLag: number;
  bodyLimitBytes: number;
  streamLimits: { total: number; perToken: number };
  concurrent: number;
} {
  if (!!opts.tlsCert !== !!opts.tlsKey) throw new CliError("--tls-cert and --tls-key go together", 2);
  const sseMaxLag = Number(opts.sseMaxLag);
  if (!Number.isInteger(sseMaxLag) || sseMaxLag < 1)
    throw new CliError(`--sse-max-lag takes a whole number above 0, not "${opts.sseMaxLag}"`, 2);
  return {
    sseMaxLag,
    bodyLimitBytes: byteSizeArg(opts.bodyLimit, "--body-limit"),
    streamLimits: {
      total: countArg(opts.maxStreams, "--max-streams"),
      perToken: countArg(opts.maxStreamsPerToken, "--max-streams-per-token"),
    },
    concurrent: countArg(opts.asOfBuilds, "--as-of-builds"),
  };
}

/**
 * Refuses (exit 2) an HTTP API address that is not one, that needs TLS, or that another process
 * listens on, unless `--http off`: called before a command opens or writes anything, where the
 * API itself listens once the projection is loaded.
 */
export async function checkHttpAddress(opts: HttpOptions): Promise<void> {
  if (opts.http === "off") return;
  const { checkListen } = await import("@chronolog/api");
  await refusedWithExit2(() => checkListen({ listen: opts.http, ...secured(opts) }));
}

/** The API's TLS certificate and key, and `insecure`, as the options give them. */
function secured(opts: HttpOptions): Pick<ApiServerOptions, "tls" | "insecure"> {
  return {
    ...(opts.tlsCert && opts.tlsKey ? { tls: { certFile: opts.tlsCert, keyFile: opts.tlsKey } } : {}),
    ...(opts.insecure ? { insecure: true } : {}),
  };
}

/** What `start` returns, with the API's refusals of its options (status 400) as exit 2. */
async function refusedWithExit2<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof Error && (error as { status?: number }).status === 400)
      throw new CliError(error.message, 2);
    throw error;
  }
}

/** Starts the HTTP API unless `--http off`; the scheduler's log takes its writes (if any). */
export async function startHttp(
  globals: DataDirOptions,
  opts: HttpOptions,
  log: EventLog,
  writeLog: EventLog | null,
  hooks?: SchedulerHooks,
  shared?: ApiServerOptions["shared"],
): Promise<ApiServer | null> {
  if (opts.http === "off") return null;
  const { sseMaxLag, bodyLimitBytes, streamLimits, concurrent } = checkHttpOptions(opts);
  const { startApiServer } = await import("@chronolog/api");
  return refusedWithExit2(() =>
    startApiServer({
      log,
      ...(writeLog ? { writeLog } : {}),
      dataDir: dataDirOf(globals),
      listen: opts.http,
      bodyLimitBytes,
      sseMaxLag,
      streamLimits,
      asOfBuilds: { concurrent, queued: concurrent * 4 },
      allowHosts: opts.allowHost ?? [],
      ...(opts.publicRead ? { publicRead: true } : {}),
      ...secured(opts),
      ...(hooks ? { hooks } : {}),
      ...(shared ? { shared } : {}),
    }),
  );
}

/**
 * An export is served only once its whole hash chain checks out: what the API answers from it
 * is then what the log held. A broken one is refused (exit 5), naming where it breaks.
 */
function verifyBeforeServing(path: string): void {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(`--file ${path}: ${(error as Error).message}`, 2);
  }
  const { result } = verifyExportText(text);
  const b = result.break;
  if (b)
    throw new CliError(
      `--file ${path}: not served: its hash chain is broken at ${b.line !== undefined ? `line ${b.line}, ` : ""}position ${b.position ?? "(unknown)"}: ${b.reason} (${result.checked} events before it verified; log verify --file ${path} says more)`,
      5,
    );
}

export function registerServeCommands(program: Command, globals: () => DataDirOptions): void {
  addHttpOptions(
    program
      .command("serve")
      .description(
        "serve the HTTP API without scheduling: for reading a log elsewhere (read-only unless --writable)",
      )
      .option("--writable", "accept writes (declarations, operator actions) from tokens that may make them"),
  ).action(async (opts: HttpOptions & { writable?: boolean }) => {
    if (opts.http === "off") throw new CliError("serve needs --http HOST:PORT: it serves nothing else", 2);
    const file = globals().file;
    if (file !== undefined) verifyBeforeServing(file);
    await checkHttpAddress(opts);
    const logger = createLogger("chronolog");
    const log = opts.writable
      ? await openLogForWrite(globals(), defaultActor("api"))
      : await openLogForRead(globals());
    const server = await startHttp(globals(), opts, log, opts.writable ? log : null);
    if (!server) return;
    const stop = async (signal: string) => {
      logger.info({ signal }, "stopping");
      await server.close();
      await log.close();
      process.exit(0);
    };
    process.on("SIGINT", () => void stop("SIGINT"));
    process.on("SIGTERM", () => void stop("SIGTERM"));
    logger.info({ url: server.url, writable: !!opts.writable }, "api listening");
    await new Promise(() => {});
  });

  const token = program.command("token").description("access tokens of the HTTP API: create, list, revoke");
  token
    .command("create")
    .description("issue a token; it is printed once, and only its hash is kept in the log")
    .argument("<name>", "a name for it (lower-case letters, digits, _ and -)")
    .requiredOption("--scope <scope>", `what it may do: ${EventSchemas.ACCESS_SCOPES.join(", ")}`)
    .option(
      "--project <project>",
      "limit what it may declare or operate on to this project (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option(
      "--read-projects <projects>",
      "limit what it may read to these projects (comma-separated; repeatable)",
      (v: string, acc: string[]) => [...acc, ...v.split(",").map((p) => p.trim())],
      [] as string[],
    )
    .option(
      "--queue <name>",
      "a work token: a worker queue it may serve (repeatable; required for --scope work)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option("--json", "print the token and its record as JSON")
    .action(
      async (
        name: string,
        opts: { scope: string; project: string[]; readProjects: string[]; queue: string[]; json?: boolean },
      ) => {
        const empty = opts.readProjects.find((p) => p === "");
        if (empty !== undefined)
          throw new CliError("--read-projects takes project names separated by commas", 2);
        const log = await openLogForWrite(globals(), defaultActor("cli"));
        try {
          const r = await issueToken(log, {
            name,
            scope: opts.scope,
            projects: opts.project,
            readProjects: opts.readProjects,
            queues: opts.queue,
          });
          if (opts.json) console.log(toJson({ token: r.token, ...r.record, position: r.position }));
          else {
            console.log(r.token);
            process.stderr.write(
              `token ${name} (${r.record.scope}${r.record.projects.length ? ` in ${r.record.projects.join(", ")}` : ""}${r.record.readProjects.length ? `, reading ${r.record.readProjects.join(", ")}` : ""}${r.record.queues.length ? ` for queues ${r.record.queues.join(", ")}` : ""}) issued at position ${r.position}: this is the only time it is shown\n`,
            );
          }
        } finally {
          await log.close();
        }
      },
    );
  token
    .command("list")
    .description("the tokens the log has issued: name, scope, projects, when, by whom, revoked")
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) => {
      const log = await openLogForRead(globals());
      try {
        const book = await readTokens(log);
        const rows = book.list().map(({ sha256: _hash, ...t }) => t);
        if (opts.json) console.log(toJson(rows));
        else
          console.log(
            listing(
              ["NAME", "SCOPE", "PROJECTS", "READS", "QUEUES", "ISSUED", "BY", "REVOKED"],
              rows.map((t) => [
                t.name,
                t.scope,
                t.projects.join(",") || "all",
                t.readProjects.join(",") || "all",
                t.queues.join(",") || "-",
                t.issuedAt,
                t.issuedBy,
                t.revokedAt ?? "-",
              ]),
              "no tokens issued",
            ),
          );
      } finally {
        await log.close();
      }
    });
  token
    .command("revoke")
    .description("revoke a token: every request with it is refused from now on")
    .argument("<name>", "the token's name")
    .option("--reason <text>", "why, recorded in the event")
    .action(async (name: string, opts: { reason?: string }) => {
      const log = await openLogForWrite(globals(), defaultActor("cli"));
      try {
        const position = await revokeToken(log, name, opts.reason);
        console.log(`token ${name} revoked (position ${position})`);
      } finally {
        await log.close();
      }
    });
}
