import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { counted, formatTaskKey, parseDeclarationText } from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import {
  AlertSender,
  checkDeclaration,
  checkpointDue,
  declare,
  isLocalWorkerId,
  LeaseBook,
  loadProjection,
  Reconciler,
  RemoteWorkers,
  RoutingDispatcher,
  removeSnapshotLeftovers,
  Scheduler,
  type SchedulerObserver,
  saveSnapshot,
  schedulerOfWorker,
} from "@chronolog/scheduler";
import {
  configureTasks,
  discardStaged,
  removeEmptyStagingDirs,
  stagingDirFor,
  taskBaseEnv,
  WorkerPool,
} from "@chronolog/worker";
import type { Command } from "commander";
import { byteSizeArg } from "../args.js";
import { startAnchoring } from "../audit.js";
import {
  type DataDirOptions,
  dataDirOf,
  defaultActor,
  kafkaConnectionOf,
  logUrlOf,
  openLogForWrite,
  originalUmask,
  parseLogUrl,
  secureDataDir,
} from "../data-dir.js";
import { CliError } from "../edge.js";
import { isolationNotice, removeLeftWorkDirs, resolveIsolation } from "../isolation.js";
import { createLogger, type Logger } from "../logger.js";
import { cliFile } from "../package-files.js";
import { acquireSchedulerLocks } from "../scheduler-lock.js";
import { progressLogger } from "../service-log.js";
import { addHttpOptions, checkHttpAddress, checkHttpOptions, type HttpOptions, startHttp } from "./serve.js";

const EXAMPLE = cliFile("examples/orders.yaml");

function exampleText(now: number): string {
  const day = new Date(now);
  day.setUTCHours(0, 0, 0, 0);
  const start = new Date(day.getTime() - 3 * 86_400_000).toISOString();
  return readFileSync(EXAMPLE, "utf8").replaceAll("{{ start_date }}", start);
}

/**
 * Fault injection for the black-box fault suite, off unless CHRONOLOG_SCHEDULER_FAULT is set:
 * `exit-after-intent` kills this process with SIGKILL once intents are durable and before their
 * dispatch, the window in which a crash leaves intents no worker confirmed; `exit-before-proceed`
 * once an attempt's start is durable and before its start permission goes out, the window in
 * which a crash leaves an attempt that is not idempotent waiting for it. With
 * CHRONOLOG_FAULT_ONCE=FILE it fires only while FILE does not exist (it creates it), so the
 * restarted scheduler runs normally.
 */
function schedulerFaults(): Pick<SchedulerObserver, "beforeDispatch" | "beforeProceed"> {
  const fault = process.env.CHRONOLOG_SCHEDULER_FAULT;
  if (!fault) return {};
  const once = process.env.CHRONOLOG_FAULT_ONCE;
  const kill = () => {
    if (once) {
      if (existsSync(once)) return;
      writeFileSync(once, String(process.pid));
    }
    process.kill(process.pid, "SIGKILL");
  };
  if (fault === "exit-after-intent") return { beforeDispatch: kill };
  if (fault === "exit-before-proceed") return { beforeProceed: kill };
  throw new Error(`unknown CHRONOLOG_SCHEDULER_FAULT "${fault}"`);
}

interface UpOptions extends HttpOptions {
  workers: string;
  capacity: string;
  warmShells: string;
  example?: boolean;
  snapshotSeconds: string;
  reconcileMs: string;
  shards: string;
  sessionTimeoutMs: string;
  grace: string;
  outputMaxBytes: string;
  anchorFile?: string;
  anchorMinutes: string;
  runAs?: string;
  passEnv: string[];
  taskDir?: string;
}

/** On a Kafka log, schedulers share the tasks through a consumer group (see KafkaMembership). */
async function joinMembership(globals: DataDirOptions, opts: UpOptions, logger: Logger) {
  const target = parseLogUrl(logUrlOf(globals));
  if (target?.kind !== "kafka") return null;
  const shards = wholeNumber(opts.shards, "--shards", 1);
  const sessionTimeoutMs = wholeNumber(opts.sessionTimeoutMs, "--session-timeout-ms", 1);
  const { KafkaMembership } = await import("@chronolog/log-kafka");
  const id = `s${process.pid}.${randomBytes(3).toString("hex")}`;
  const membership = await KafkaMembership.join({
    ...(await kafkaConnectionOf(target)),
    id,
    shards,
    sessionTimeoutMs,
    onFailure: (error) => {
      // Out of the group for good: hold nothing, and let a supervisor start a fresh process.
      logger.error({ err: error }, "left the scheduler group for good; exiting");
      process.kill(process.pid, "SIGTERM");
    },
  });
  membership.onChange(() =>
    logger.info(
      {
        scheduler: id,
        shards: membership.heldShards(),
        // Fenced: how long the group has not answered (the fence comes down at fenceAfterMs).
        ...(membership.fenced()
          ? {
              fenced: true,
              silentMs: Math.round(membership.sinceRenewalMs),
              fenceAfterMs: membership.fenceAfterMs,
            }
          : {}),
      },
      "shards assigned",
    ),
  );
  logger.info({ scheduler: id, shards: membership.heldShards(), of: membership.shards }, "shards assigned");
  return membership;
}

/** A flag's value as a whole number of at least `min` (0 or 1), or an error naming the flag. */
function wholeNumber(text: string, flag: string, min: 0 | 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new CliError(
      `${flag} takes a whole number${min === 0 ? ", 0 or more," : " above 0,"} not "${text}"`,
      2,
    );
  return n;
}

/** A flag's value in milliseconds (`text` times `unit`), above 0 and within a timer's range. */
function positiveMs(text: string, unit: number, flag: string): number {
  const ms = Number(text) * unit;
  if (!(ms > 0 && ms <= 2 ** 31 - 1)) throw new CliError(`${flag} takes a number above 0, not "${text}"`, 2);
  return ms;
}

async function up(globals: DataDirOptions, opts: UpOptions): Promise<void> {
  const logger = createLogger("chronolog");
  // Every flag is checked before anything is opened or written.
  const workers = wholeNumber(opts.workers, "--workers", 1);
  const capacity = wholeNumber(opts.capacity, "--capacity", 1);
  const snapshotMs = positiveMs(opts.snapshotSeconds, 1000, "--snapshot-seconds");
  const reconcileMs = positiveMs(opts.reconcileMs, 1, "--reconcile-ms");
  const graceMs = wholeNumber(opts.grace, "--grace", 0) * 1000;
  checkHttpOptions(opts);
  const warmShells = wholeNumber(opts.warmShells, "--warm-shells", 0);
  const outputMaxBytes = byteSizeArg(opts.outputMaxBytes, "--output-max-bytes");
  const anchorMs = Number(opts.anchorMinutes) * 60_000;
  if (!(anchorMs > 0 && anchorMs <= 2 ** 31 - 1))
    throw new CliError(
      `--anchor-minutes takes a number above 0 (at most 35000), not "${opts.anchorMinutes}"`,
      2,
    );
  const dir = dataDirOf(globals);
  const isolation = resolveIsolation(opts, dir);
  // The data directory is the scheduler's alone (0700, its files 0600), whatever made it before.
  const tightened = secureDataDir(dir);
  if (tightened > 0)
    logger.info({ dataDir: dir, entries: tightened }, "took others' permissions off the data directory");
  // One scheduler per embedded or EventStoreDB log (held by the data directory's lock), and per
  // task directory (whose staging it clears as it starts); schedulers sharing a Kafka log
  // coordinate through a group.
  const lock =
    parseLogUrl(logUrlOf(globals))?.kind === "kafka" ? null : acquireSchedulerLocks(dir, isolation.taskDir);
  // Its HTTP API's address, refused before anything is said or opened (a second scheduler is
  // refused above, by its lock, not for the port the first one holds).
  await checkHttpAddress(opts).catch((error: unknown) => {
    lock?.release();
    throw error;
  });
  // Said once this process is the one that schedules (a second one is refused above).
  const notice = isolationNotice(isolation);
  logger[notice.level](notice.fields, notice.message);
  const stagingRoot = join(isolation.taskDir, "staging");
  if (lock) {
    // Under the lock no attempt or checkpoint of an earlier process is under way, and this
    // process's workers have not started: what killed ones left half-done goes.
    const leftovers = {
      stagingDirs: removeEmptyStagingDirs(stagingRoot),
      workDirs: removeLeftWorkDirs(isolation, logger),
      checkpointFiles: removeSnapshotLeftovers(dir),
    };
    if (leftovers.stagingDirs + leftovers.workDirs + leftovers.checkpointFiles > 0)
      logger.info(leftovers, "removed what killed attempts and checkpoints left behind");
  }
  const newPool = (idPrefix: string) =>
    new WorkerPool({
      size: workers,
      capacity,
      warmShells,
      stagingRoot,
      outputRoot: join(dir, "output"),
      outputMaxBytes,
      idPrefix,
      ...(isolation.runAs ? { runAs: { uid: isolation.runAs.uid, gid: isolation.runAs.gid } } : {}),
      workRoot: join(isolation.taskDir, "work"),
      passEnv: isolation.passEnv,
      taskUmask: originalUmask(),
    });
  // Alone, the workers' ids are known now: they start while the log is opened and the
  // projection loaded, and are ready sooner for what the start-up hands them.
  const earlyPool = lock ? newPool(`w${process.pid}`) : null;
  // On a Kafka log the scheduler's client starts from its checkpoint of the topic's index.
  const log = await openLogForWrite(globals, defaultActor("scheduler"), {
    indexCheckpoints: { notice: (level, message, fields) => logger[level](fields, message) },
  });
  const loaded = await loadProjection(log, dir);
  if (loaded.discarded) logger.warn({ reason: loaded.discarded }, "snapshot not used; replayed the log");
  const { projection } = loaded;
  logger.info(
    {
      dataDir: dir,
      snapshotPosition: String(loaded.snapshotPosition),
      replayed: loaded.replayed,
      tasks: projection.tasks.size,
    },
    "projection loaded",
  );
  // A checkpoint serialises the whole projection on the event loop: it is skipped when nothing
  // changed, spaced so that it takes at most a twentieth of the scheduler's time, and written at
  // once when the projection stops moving (checkpointDue). The last one, made when stopping
  // (`force`), waits for one under way and is always made.
  let saving: Promise<void> | null = null;
  let savedPosition: bigint | null = null;
  let lastSave = { at: 0, tookMs: 0 };
  let positionAtTickBefore: bigint | null = null;
  const checkpoint = async (force = false): Promise<void> => {
    if (saving) {
      if (!force) return;
      await saving.catch(() => {});
    }
    if (projection.position === savedPosition) return;
    if (
      !force &&
      !checkpointDue({
        position: projection.position,
        savedPosition,
        positionAtTickBefore,
        msSinceLastSave: performance.now() - lastSave.at,
        lastSaveTookMs: lastSave.tookMs,
      })
    )
      return;
    const started = performance.now();
    const position = projection.position;
    saving = saveSnapshot(dir, log, projection);
    try {
      await saving;
      savedPosition = position;
    } finally {
      saving = null;
      const ended = performance.now();
      lastSave = { at: ended, tookMs: ended - started };
    }
  };
  // Checkpoints start now: joining a group can take a session timeout when a dead member
  // is still in it.
  const timer = setInterval(() => {
    // checkpointDue reads the position of the tick before: it is taken after the look.
    checkpoint().catch((error) => logger.error({ err: error }, "checkpoint failed"));
    positionAtTickBefore = projection.position;
  }, snapshotMs);

  const membership = await joinMembership(globals, opts, logger);
  // Worker ids carry this scheduler's id (its pid when it runs alone): a worker named in the
  // log with another prefix belonged to another scheduler process. Alone, that process was an
  // earlier one and its workers died with it; sharing a Kafka log, it is gone once the group
  // says so.
  const workerPrefix = membership ? membership.id : `w${process.pid}`;
  const isOwnWorker = (id: string) => id.startsWith(`${workerPrefix}-`);
  const pool = earlyPool ?? newPool(workerPrefix);
  // Remote workers (`chronolog worker`) take the attempts of tasks with a queue; the pool, the rest.
  // The attempts' leases: renewed by the workers' reports, and by anything a remote worker sends.
  const leases = new LeaseBook();
  const remote = new RemoteWorkers({
    log,
    leases,
    projection,
    logger,
    schedulerId: workerPrefix,
    outputRoot: join(dir, "output"),
    outputMaxBytes,
    // Alone, the workers connected to an earlier process are kept in a file; on a Kafka log the
    // others record a dead scheduler's workers gone, from the log (see closeGoneSchedulers).
    ...(lock ? { stateFile: join(dir, "remote-workers.json") } : {}),
  });
  const dispatcher = new RoutingDispatcher(pool, remote);
  /** Set by the first SIGTERM or SIGINT (see stop below). */
  let stopping = false;
  const progress = progressLogger(logger, () => stopping);
  // The HTTP API reads the scheduler's projection, and hears each event as it applies it.
  const appliedListeners = new Set<(e: RecordedEvent) => void>();
  const scheduler = new Scheduler({
    log,
    projection,
    dispatcher,
    queues: remote,
    leases,
    logger,
    observer: {
      applied: (e) => {
        progress(e);
        for (const l of appliedListeners) l(e);
      },
      ...schedulerFaults(),
    },
    ...(membership ? { membership } : {}),
  });
  const reconciler = new Reconciler({
    log,
    projection,
    dispatcher,
    actor: defaultActor("reconciler"),
    intervalMs: reconcileMs,
    logger,
    scheduler,
    // A remote worker is never taken for gone: its attempts' leases say when they are lost.
    isWorkerGone: membership
      ? (id) => isLocalWorkerId(id) && !isOwnWorker(id) && !membership.isAlive(schedulerOfWorker(id))
      : (id) => isLocalWorkerId(id) && !isOwnWorker(id),
    // Another scheduler's intents get its session timeout to be confirmed: if it is alive its
    // workers will start them; if it died, the group has said so by then.
    ...(membership ? { foreignIntentGraceMs: membership.sessionTimeoutMs + 2000 } : {}),
    ...(membership ? { isOwnWorker } : {}),
    // A remote worker's attempts are watched by the owner of their shard; one no connected
    // worker holds here is asked about at each pass, and adopted by the worker that knows it.
    isRemoteWorker: (id) => !isLocalWorkerId(id),
    unheldRemote: (token) => !remote.holds(token),
  });
  // Alerts about the tasks and workflows this scheduler owns are delivered from here.
  // A command sink is declared code, as a task is: it runs as the tasks do.
  configureTasks({ passEnv: isolation.passEnv });
  const alerts = new AlertSender({
    log,
    projection,
    logger,
    commands: {
      ...(isolation.runAs ? { uid: isolation.runAs.uid, gid: isolation.runAs.gid } : {}),
      env: () => taskBaseEnv(),
      cwd: join(isolation.taskDir, "work"),
    },
    owns: ({ task, workflow }) =>
      scheduler.owns({
        id: task ? formatTaskKey(task) : (workflow ?? ""),
        spec: workflow || !task ? { workflow } : (projection.tasks.get(formatTaskKey(task))?.spec ?? {}),
      }),
  });
  // The HTTP API: it reads the scheduler's projection and writes through the same log.
  const api = await startHttp(
    globals,
    opts,
    log,
    log,
    {
      onAppend: (listener) => log.onAppend(listener),
      onReconcilePass: (listener) => reconciler.onPass((ms) => listener(ms)),
    },
    {
      projection,
      feed: (listener) => {
        appliedListeners.add(listener);
        return () => appliedListeners.delete(listener);
      },
      workers: remote,
    },
  ).catch(async (error: unknown) => {
    // Started before any dispatch: an API that cannot start (its port in use) stops it all.
    clearInterval(timer);
    await pool.close(0);
    await membership?.close();
    await log.close();
    lock?.release();
    throw error;
  });
  if (api) logger.info({ url: api.url }, "api listening");
  // The example is declared once nothing can refuse the start any more (a flag, the lock, the
  // HTTP API's port): a start that is refused has written nothing. It is declared only into a
  // log that holds none of its tasks: a restart keeps what was declared since (an earlier start
  // date, a changed task) and resumes the catch-up from where the example began.
  if (opts.example) {
    const now = Date.now();
    const declareExample = async () => {
      const source = parseDeclarationText(exampleText(now), { filename: "examples/orders.yaml" });
      const held = checkDeclaration(projection, [source], now).tasks.filter((t) => t.outcome !== "declared");
      if (held.length > 0)
        logger.info(
          { tasks: held.map((t) => t.task) },
          "the example is declared here already: kept as it is",
        );
      else {
        const outcome = await declare(log, projection, [source], now);
        for (const t of outcome.tasks) logger.info({ task: t.task, outcome: t.outcome }, "example task");
      }
    };
    await declareExample().catch(async (error: unknown) => {
      clearInterval(timer);
      await api?.close();
      await pool.close(0);
      await membership?.close();
      await log.close();
      lock?.release();
      throw error;
    });
  }
  await scheduler.start();
  const anchoring = opts.anchorFile ? startAnchoring(log, opts.anchorFile, anchorMs, logger) : null;
  // Alone on the embedded log, under the lock: the earlier process and its workers are gone, so
  // what it left in flight is settled now rather than at the first reconcile pass.
  if (lock) {
    const settled = await reconciler.settleAtStart();
    // What those lost attempts staged is never published: their workers are gone.
    await Promise.all(settled.lost.map((t) => discardStaged(stagingDirFor(stagingRoot, t))));
    if (settled.lost.length + settled.abandoned > 0)
      logger.info(
        { lost: settled.lost.length, abandoned: settled.abandoned },
        "settled the attempts an earlier process left in flight",
      );
  }
  // Workers an earlier process left recorded as connected are recorded gone: they reconnect here.
  if (lock) {
    const closed = await remote.settleAtStart();
    if (closed > 0)
      logger.info({ workers: closed }, "recorded the remote workers of an earlier process gone");
  }
  // On a Kafka log, the registrations of a scheduler that left the group are recorded gone here.
  const closeGone = () => {
    if (!membership) return;
    remote
      .closeGoneSchedulers((id) => !membership.isAlive(id), membership.sessionTimeoutMs + 5000)
      .then((n) => {
        if (n > 0) logger.info({ registrations: n }, "recorded the remote workers of a gone scheduler gone");
      })
      .catch((error) => logger.error({ err: error }, "could not record a gone scheduler's workers gone"));
  };
  // The group's member list follows its assignments: looked at again every few seconds.
  membership?.onChange(closeGone);
  closeGone();
  const goneTimer = membership ? setInterval(closeGone, 2000) : undefined;
  goneTimer?.unref();
  reconciler.start();
  alerts.start();
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal: what still runs is stopped now, and recorded as interrupted.
      // (Lines of the service log, as every other: JSON where stderr is a file or a collector's pipe.)
      logger.warn({ signal }, "stopping now: the running attempts are interrupted");
      pool.stopNow();
      return;
    }
    stopping = true;
    logger.info({ signal }, "stopping");
    // Nothing new starts; what runs may finish within the grace, and its reports are written.
    scheduler.stopDispatching();
    const running = [...projection.instances.values()].filter(
      (i) =>
        (i.status === "running" || i.status === "queued") &&
        (!membership || isOwnWorker(i.attempts.at(-1)?.workerId ?? "")),
    ).length;
    if (running > 0)
      logger.info(
        { running, graceSeconds: graceMs / 1000 },
        `waiting for ${counted(running, "running attempt")} (up to ${graceMs / 1000} s; Ctrl-C again to stop now)`,
      );
    clearInterval(timer);
    clearInterval(goneTimer);
    // Remote workers keep what they run, and reconnect to the next process, which adopts it.
    await remote.close("scheduler shutting down");
    await api?.close();
    reconciler?.stop();
    alerts.stop();
    // The workers finish (or are stopped, each attempt reported interrupted) and their reports
    // are written before the group hears that this scheduler left, so no other scheduler takes
    // a live attempt for lost.
    await pool.close(graceMs);
    await scheduler.stop();
    await membership?.close();
    await anchoring?.stop();
    await checkpoint(true);
    await log.close();
    lock?.release();
    logger.info({ ...scheduler.stats, reconciled: reconciler?.totals.written ?? 0 }, "stopped");
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  // Said once a stop would be handled: a supervisor may signal as soon as it reads this.
  logger.info({ workers, tasks: projection.tasks.size }, "chronolog is up");
  await scheduler.done;
}

export function registerUpCommand(program: Command, globals: () => DataDirOptions): void {
  for (const [name, description] of [
    ["up", "run the scheduler, the reconcile loop and a pool of workers (on the embedded log by default)"],
    [
      "scheduler",
      "run one scheduler with its reconcile loop and workers; on a Kafka log (--log kafka://...) several share the tasks",
    ],
  ] as const) {
    addHttpOptions(program.command(name))
      .description(description)
      .option("-w, --workers <n>", "worker processes", "2")
      .option("--capacity <n>", "attempts each worker runs at once", "16")
      .option("--warm-shells <n>", "shells each worker keeps started ahead of need, for shell tasks", "2")
      .option(
        "--example",
        "declare the example workflow (three tasks across two projects) unless the log holds it",
      )
      .option("--snapshot-seconds <s>", "how often to checkpoint the projection", "5")
      .option("--reconcile-ms <ms>", "time between reconcile passes", "1000")
      .option(
        "--grace <seconds>",
        "on Ctrl-C or SIGTERM, how long running attempts may finish before they are interrupted (or $CHRONOLOG_SHUTDOWN_GRACE)",
        process.env.CHRONOLOG_SHUTDOWN_GRACE ?? "30",
      )
      .option(
        "--output-max-bytes <size>",
        "the most of one attempt's output kept in its file under output/ (e.g. 1MiB, 0 for none; or $CHRONOLOG_OUTPUT_MAX_BYTES)",
        process.env.CHRONOLOG_OUTPUT_MAX_BYTES ?? "1MiB",
      )
      .option(
        "--anchor-file <path>",
        "append the log's head (POSITION HASH TIME) to this file every --anchor-minutes, and at a clean stop",
      )
      .option("--anchor-minutes <n>", "minutes between two anchors (a fraction, e.g. 0.5, is allowed)", "60")
      .option(
        "--run-as <user>",
        "run tasks as this user (a name, uid or uid:gid; default nobody when started as root, else the scheduler's own user; or $CHRONOLOG_RUN_AS)",
        process.env.CHRONOLOG_RUN_AS || undefined,
      )
      .option(
        "--pass-env <name>",
        "give tasks this variable of the scheduler's environment too (repeatable; tasks get only PATH, LANG, LANGUAGE, TZ and LC_* otherwise)",
        (v: string, acc: string[]) => [...acc, v],
        [] as string[],
      )
      .option(
        "--task-dir <dir>",
        "where each attempt gets its working and staging directories, outside the data directory (default DATA_DIR-tasks; or $CHRONOLOG_TASK_DIR)",
        process.env.CHRONOLOG_TASK_DIR || undefined,
      )
      .option("--shards <n>", "Kafka log: shards the tasks fall into, for a shard topic created now", "12")
      .option(
        "--session-timeout-ms <ms>",
        "Kafka log: silence after which a scheduler's shards move to the others",
        "6000",
      )
      .action((opts: UpOptions) => up(globals(), opts));
  }
}
