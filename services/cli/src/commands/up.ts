import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatTaskKey, parseDeclarationText, shortInstant } from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import { declare, loadProjection, Scheduler, saveSnapshot } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import type { Command } from "commander";
import { type DataDirOptions, dataDirOf, defaultActor, openLogForWrite } from "../data-dir.js";
import { createLogger } from "../logger.js";

const EXAMPLE = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));

function exampleText(now: number): string {
  const day = new Date(now);
  day.setUTCHours(0, 0, 0, 0);
  const start = new Date(day.getTime() - 3 * 86_400_000).toISOString();
  return readFileSync(EXAMPLE, "utf8").replaceAll("{{ start_date }}", start);
}

export function registerUpCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("up")
    .description("run the scheduler and a pool of workers on the embedded log, in one command")
    .option("-w, --workers <n>", "worker processes", "2")
    .option("--capacity <n>", "attempts each worker runs at once", "16")
    .option("--example", "declare the example workflow first (three tasks across two projects)")
    .option("--snapshot-seconds <s>", "how often to checkpoint the projection", "5")
    .action(
      async (opts: { workers: string; capacity: string; example?: boolean; snapshotSeconds: string }) => {
        const logger = createLogger("chronolog");
        const dir = dataDirOf(globals());
        const log = openLogForWrite(globals(), defaultActor("scheduler"));
        const loaded = await loadProjection(log, dir);
        if (loaded.discarded)
          logger.warn({ reason: loaded.discarded }, "snapshot not used; replayed the log");
        logger.info(
          {
            dataDir: dir,
            snapshotPosition: String(loaded.snapshotPosition),
            replayed: loaded.replayed,
            tasks: loaded.projection.tasks.size,
          },
          "projection loaded",
        );
        const { projection } = loaded;
        if (opts.example) {
          const outcome = await declare(
            log,
            projection,
            [parseDeclarationText(exampleText(Date.now()), { filename: "examples/orders.yaml" })],
            Date.now(),
          );
          for (const t of outcome.tasks) logger.info({ task: t.task, outcome: t.outcome }, "example task");
        }
        const pool = new WorkerPool({
          size: Number(opts.workers),
          capacity: Number(opts.capacity),
          stagingRoot: join(dir, "staging"),
        });
        const onApplied = (e: RecordedEvent) => {
          if (e.type === "IntervalCompleted") {
            logger.info(
              { task: formatTaskKey(e.data.key), interval: shortInstant(e.data.logicalDate) },
              "interval completed",
            );
          } else if (e.type === "IntervalFailed") {
            logger.warn(
              {
                task: formatTaskKey(e.data.key),
                interval: shortInstant(e.data.logicalDate),
                reason: e.data.reason,
              },
              "interval failed",
            );
          } else if (e.type === "AttemptFailed") {
            logger.warn(
              {
                stream: e.streamId,
                attempt: e.data.attempt,
                error: e.data.error.message,
                retryAt: e.data.retryAt,
              },
              "attempt failed",
            );
          }
        };
        const scheduler = new Scheduler({ log, projection, dispatcher: pool, logger, onApplied });
        await scheduler.start();
        logger.info({ workers: Number(opts.workers), tasks: projection.tasks.size }, "chronolog is up");

        let saving = false;
        const checkpoint = async () => {
          if (saving) return;
          saving = true;
          try {
            await saveSnapshot(dir, log, projection);
          } finally {
            saving = false;
          }
        };
        const timer = setInterval(() => {
          checkpoint().catch((error) => logger.error({ err: error }, "checkpoint failed"));
        }, Number(opts.snapshotSeconds) * 1000);

        let stopping = false;
        const stop = async (signal: string) => {
          if (stopping) return;
          stopping = true;
          logger.info({ signal }, "stopping");
          clearInterval(timer);
          await pool.close(5_000);
          await scheduler.stop();
          await checkpoint();
          await log.close();
          logger.info(scheduler.stats, "stopped");
          process.exit(0);
        };
        process.on("SIGINT", () => void stop("SIGINT"));
        process.on("SIGTERM", () => void stop("SIGTERM"));
        await scheduler.done;
      },
    );
}
