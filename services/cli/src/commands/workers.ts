import { counted } from "@chronolog/core";
import { type WorkerRow, workerListing } from "@chronolog/scheduler";
import type { Command } from "commander";
import type { DataDirOptions } from "../data-dir.js";
import { toJson } from "../edge.js";
import { listing, short } from "../format.js";
import { type AsOfFlags, addAsOfOptions, withReadSession } from "../projection.js";

/** What a worker runs, in a cell: `p/a/train/ALL 2026-11-28T02:00Z #1, ...`, or `-`. */
function runningText(w: WorkerRow): string {
  const shown = w.running.map((a) => `${a.task} ${short(a.logicalDate)} #${a.attempt}`);
  if (w.hidden > 0) shown.push(`${counted(w.hidden, "attempt")} of other projects`);
  return shown.join(", ") || "-";
}

export function registerWorkersCommand(program: Command, globals: () => DataDirOptions): void {
  addAsOfOptions(program.command("workers"))
    .description("remote workers connected: queues, load, version, since when, and what each runs")
    .option("--all", "also the workers gone recently, with why")
    .option("--json", "print JSON")
    .action(async (opts: { all?: boolean; json?: boolean } & AsOfFlags) => {
      await withReadSession(globals(), opts, async ({ projection }) => {
        const workers = workerListing(projection, { all: opts.all === true });
        if (opts.json) {
          console.log(toJson(workers, 2));
          return;
        }
        console.log(
          listing(
            ["WORKER", "HOST", "QUEUES", "LOAD", "VERSION", "SINCE", "HEARD", "RUNNING"],
            workers.connected.map((w) => [
              w.id,
              w.host,
              w.queues.join(","),
              `${w.busy}/${w.capacity}`,
              w.version,
              short(w.since),
              short(w.lastHeard),
              runningText(w),
            ]),
            "no workers are connected",
          ),
        );
        if (!workers.disconnected) return;
        console.log("");
        console.log(
          listing(
            ["GONE", "HOST", "QUEUES", "CONNECTED", "DISCONNECTED", "WHY"],
            workers.disconnected.map((w) => [
              w.id,
              w.host,
              w.queues.join(","),
              short(w.since),
              short(w.until),
              w.reason,
            ]),
            "no workers disconnected recently",
          ),
        );
      });
    });
}
