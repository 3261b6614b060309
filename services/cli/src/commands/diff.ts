import { counted, instantInput, ValidationError } from "@chronolog/core";
import { positionAsOf } from "@chronolog/log";
import { diffPositions } from "@chronolog/scheduler";
import type { Command } from "commander";
import { type DataDirOptions, dataDirOf, openLogForRead } from "../data-dir.js";
import { toJson } from "../edge.js";

const show = (v: unknown) => (v === null || v === undefined ? "-" : typeof v === "string" ? v : toJson(v));

export function registerDiffCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("diff")
    .description(
      "what changed between two log positions (or instants): tasks, instances, runs and declarations, old -> new, with the events that changed them",
    )
    .requiredOption("--from <at>", "the earlier position, or an instant (the last event at or before it)")
    .requiredOption("--to <at>", "the later position or instant")
    .option("--json", "print JSON")
    .action(async (opts: { from: string; to: string; json?: boolean }) => {
      const log = await openLogForRead(globals());
      try {
        const head = await log.headPosition();
        const positionOf = async (text: string, flag: string): Promise<bigint> => {
          if (/^\d+$/.test(text)) {
            const p = BigInt(text);
            if (p > head)
              throw new ValidationError(flag, [
                { path: "", message: `position ${p} is past the log's head (${head})` },
              ]);
            return p;
          }
          return positionAsOf(log, new Date(instantInput(text, flag)));
        };
        const from = await positionOf(opts.from, "--from");
        const to = await positionOf(opts.to, "--to");
        if (to < from)
          throw new ValidationError("--to", [
            { path: "", message: `position ${to} is before --from's ${from}` },
          ]);
        const diff = await diffPositions(log, dataDirOf(globals()), from, to);
        if (opts.json) {
          console.log(toJson(diff));
          return;
        }
        console.log(
          `from position ${diff.from} to ${diff.to}: ${counted(diff.events, "event")}, ${diff.changes.length} changed`,
        );
        for (const c of diff.changes) {
          console.log(`${c.kind} ${c.id}`);
          for (const f of c.changes) console.log(`  ${f.field}: ${show(f.from)} -> ${show(f.to)}`);
          const events = c.events.map((e) => `${e.position} ${e.type}`);
          const shown =
            events.length > 8
              ? [...events.slice(0, 4), `... ${events.length - 8} more ...`, ...events.slice(-4)]
              : events;
          console.log(`  by ${shown.join(", ")}`);
        }
      } finally {
        await log.close();
      }
    });
}
