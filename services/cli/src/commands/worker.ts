import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { queueName } from "@chronolog/core";
import {
  configureTasks,
  FatalRefusal,
  Link,
  RemoteWorker,
  removeEmptyStagingDirs,
  setWarmShells,
} from "@chronolog/worker";
import type { Command } from "commander";
import { originalUmask, secureDataDir } from "../data-dir.js";
import { CliError } from "../edge.js";
import { isolationNotice, removeLeftWorkDirs, resolveIsolation } from "../isolation.js";
import { createLogger } from "../logger.js";
import { cliVersion } from "../package-files.js";
import { acquireTaskDirLock } from "../scheduler-lock.js";

interface WorkerOptions {
  connect: string[];
  token?: string;
  queue: string[];
  capacity: string;
  id?: string;
  ca?: string;
  insecure?: boolean;
  dir: string;
  grace: string;
  runAs?: string;
  passEnv: string[];
  taskDir?: string;
  warmShells: string;
}

const version = cliVersion();

function whole(text: string, flag: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new CliError(`${flag} takes a whole number of at least ${min}, not "${text}"`, 2);
  return n;
}

/** This host's name as a worker id: what an id may hold, the rest replaced. */
function defaultId(): string {
  const name = hostname()
    .replace(/[^A-Za-z0-9_.:-]/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "");
  return (name || "worker").slice(0, 128);
}

async function work(opts: WorkerOptions): Promise<void> {
  const logger = createLogger("chronolog-worker");
  const token = opts.token ?? process.env.CHRONOLOG_TOKEN;
  if (!token) throw new CliError("worker needs --token TOKEN (a work token), or $CHRONOLOG_TOKEN", 2);
  if (opts.queue.length === 0) throw new CliError("worker needs at least one --queue NAME", 2);
  for (const q of opts.queue)
    if (!queueName.safeParse(q).success)
      throw new CliError(
        `--queue "${q}": a queue name is lower-case letters, digits, _, . and -, starting with a letter or digit`,
        2,
      );
  const capacity = whole(opts.capacity, "--capacity", 1);
  const graceMs = whole(opts.grace, "--grace", 0) * 1000;
  const warmShells = whole(opts.warmShells, "--warm-shells", 0);
  const id = opts.id ?? defaultId();
  let ca: Buffer | undefined;
  if (opts.ca) {
    try {
      ca = readFileSync(opts.ca);
    } catch (error) {
      throw new CliError(`--ca ${opts.ca}: ${(error as Error).message}`, 2);
    }
  }
  if (opts.connect.length === 0) throw new CliError("worker needs --connect URL (one per scheduler)", 2);
  if (new Set(opts.connect).size < opts.connect.length)
    throw new CliError("--connect names the same scheduler twice: give each scheduler's URL once", 2);
  if (capacity < opts.connect.length)
    throw new CliError(
      `--capacity ${capacity} is shared by the ${opts.connect.length} schedulers of --connect: give at least ${opts.connect.length}`,
      2,
    );
  let links: Link[];
  try {
    links = opts.connect.map(
      (url) => new Link({ url, token, ...(ca ? { ca } : {}), insecure: !!opts.insecure }),
    );
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  // Its own directory, as a scheduler's data directory: the attempts' output files (0700).
  const dir = resolve(opts.dir);
  secureDataDir(dir);
  const isolation = resolveIsolation(opts, dir);
  const notice = isolationNotice(isolation);
  logger[notice.level](notice.fields, notice.message);
  const stagingRoot = join(isolation.taskDir, "staging");
  // Its task directory is its own (it clears what killed attempts left there): held for its life,
  // let go by the kernel whenever it ends.
  acquireTaskDirLock(isolation.taskDir, `worker directory ${dir}`);
  removeEmptyStagingDirs(stagingRoot);
  const workDirs = removeLeftWorkDirs(isolation, logger);
  if (workDirs > 0) logger.info({ workDirs }, "removed the working directories killed attempts left behind");
  configureTasks({
    ...(isolation.runAs ? { identity: { uid: isolation.runAs.uid, gid: isolation.runAs.gid } } : {}),
    workRoot: join(isolation.taskDir, "work"),
    passEnv: isolation.passEnv,
  });
  process.umask(originalUmask());
  setWarmShells(warmShells);
  const worker = new RemoteWorker({
    links,
    id,
    host: hostname(),
    queues: opts.queue,
    capacity,
    version: `chronolog ${version}`,
    runtime: { stagingRoot, outputRoot: join(dir, "output") },
    log: (message) => logger.info({ worker: id }, message),
  });
  let signals = 0;
  const stop = (signal: string) => {
    signals += 1;
    // A third: out now, what is not delivered left to the scheduler's lease.
    if (signals >= 3) process.exit(130);
    if (signals === 1)
      logger.info({ signal, graceSeconds: graceMs / 1000 }, "stopping: running attempts may finish");
    void worker.stop(signals === 1 ? graceMs : 0).then(() => process.exit(0));
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("unhandledRejection", (err) => logger.error({ err }, "unhandled rejection"));
  logger.info(
    { worker: id, schedulers: links.map((l) => l.base.origin), queues: opts.queue, capacity },
    "chronolog worker starting",
  );
  try {
    await worker.run();
  } catch (error) {
    if (error instanceof FatalRefusal) throw new CliError(error.message, 2);
    throw error;
  }
}

export function registerWorkerCommand(program: Command): void {
  program
    .command("worker")
    .description(
      "run a remote worker: take the attempts of some queues from a scheduler's HTTP API, over HTTPS out",
    )
    .option(
      "--connect <url>",
      "a scheduler's API (https://HOST:PORT; http only to loopback or with --insecure); repeatable: one per scheduler sharing a Kafka log",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option("--token <token>", "a work token for the queues served (or $CHRONOLOG_TOKEN)")
    .option(
      "--queue <name>",
      "a queue to serve (repeatable, at least one)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option("--capacity <n>", "attempts run at once (shared evenly by the schedulers of --connect)", "8")
    .option("--id <id>", "this worker's id (default: the host name)")
    .option(
      "--ca <file>",
      "PEM file of the CA that signed the scheduler's certificate (default: the system's)",
    )
    .option("--insecure", "allow plain http to a host that is not loopback")
    .option(
      "--dir <dir>",
      "where the worker keeps attempts' output (default ./.chronolog-worker)",
      ".chronolog-worker",
    )
    .option("--grace <seconds>", "on Ctrl-C or SIGTERM, how long running attempts may finish", "30")
    .option(
      "--run-as <user>",
      "run tasks as this user (default nobody when started as root)",
      process.env.CHRONOLOG_RUN_AS || undefined,
    )
    .option(
      "--pass-env <name>",
      "give tasks this variable of the worker's environment too (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option(
      "--task-dir <dir>",
      "where each attempt gets its working and staging directories (default DIR-tasks)",
    )
    .option("--warm-shells <n>", "shells kept started ahead of need, for shell tasks", "2")
    .action((opts: WorkerOptions) => work(opts));
}
