import { counted } from "@chronolog/core";
import { dropSnapshot, ladderRungs, rebuildWithLadder } from "@chronolog/scheduler";
import type { Command } from "commander";
import { type DataDirOptions, dataDirOf, defaultActor, openLogForWrite } from "../data-dir.js";
import { toJson } from "../edge.js";

export function registerRebuildCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("rebuild")
    .description(
      "drop the projection's snapshots and rebuild them from the whole log: the latest, and the ladder that --at folds from",
    )
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const dir = dataDirOf(globals());
      const log = await openLogForWrite(globals(), defaultActor("cli"));
      try {
        const dropped = dropSnapshot(dir);
        const started = performance.now();
        const { projection, replayed } = await rebuildWithLadder(log, dir);
        const ms = performance.now() - started;
        const result = {
          droppedSnapshot: dropped,
          replayedEvents: replayed,
          position: projection.position,
          tasks: projection.tasks.size,
          activeInstances: projection.instances.size,
          ladder: ladderRungs(dir).map(String),
          ms: Math.round(ms),
        };
        if (opts.json) console.log(toJson(result));
        else
          console.log(
            `rebuilt from ${counted(replayed, "event")} in ${result.ms} ms: ${counted(result.tasks, "task")}, ${counted(result.activeInstances, "instance")} in play, position ${projection.position}; snapshots at positions ${result.ladder.join(", ") || "-"}`,
          );
      } finally {
        await log.close();
      }
    });
}
