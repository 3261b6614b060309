import { dropSnapshot, loadProjection, saveSnapshot } from "@chronolog/scheduler";
import type { Command } from "commander";
import { type DataDirOptions, dataDirOf, defaultActor, openLogForWrite } from "../data-dir.js";
import { toJson } from "../edge.js";

export function registerRebuildCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("rebuild")
    .description("drop the projection's snapshot and rebuild it from the whole log")
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const dir = dataDirOf(globals());
      const log = await openLogForWrite(globals(), defaultActor("cli"));
      try {
        const dropped = dropSnapshot(dir);
        const started = performance.now();
        const { projection, replayed } = await loadProjection(log, dir, { fromScratch: true });
        const ms = performance.now() - started;
        await saveSnapshot(dir, log, projection);
        const result = {
          droppedSnapshot: dropped,
          replayedEvents: replayed,
          position: projection.position,
          tasks: projection.tasks.size,
          activeInstances: projection.instances.size,
          ms: Math.round(ms),
        };
        if (opts.json) console.log(toJson(result));
        else
          console.log(
            `rebuilt from ${replayed} events in ${result.ms} ms: ${result.tasks} tasks, ${result.activeInstances} instances in play, position ${projection.position}`,
          );
      } finally {
        await log.close();
      }
    });
}
