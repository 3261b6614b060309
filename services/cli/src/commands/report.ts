import { describeOutsideReport, type OutsideReport, ValidationError } from "@chronolog/core";
import { reportInterval } from "@chronolog/scheduler";
import type { Command } from "commander";
import { instantArg, intervalArg } from "../args.js";
import { type DataDirOptions, defaultActor } from "../data-dir.js";
import { toJson } from "../edge.js";
import { taskIdArg, withSession } from "../projection.js";

/** `report`: an outside task's interval reported succeeded or failed by whoever produces its data. */
export function registerReportCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("report")
    .description(
      "report an interval of an outside task (operator: { type: external }) succeeded, or failed with a reason",
    )
    .argument("<task>", "project/account/name[/partition]")
    .requiredOption("--interval <date>", "the interval: an instant, or a day (the interval starting on it)")
    .option("--failed <reason>", "report it failed, saying why")
    .option("--reason <text>", "a note recorded with a success")
    .option("--json", "print JSON")
    .action(
      async (key: string, opts: { interval: string; failed?: string; reason?: string; json?: boolean }) => {
        if (opts.failed !== undefined && !opts.failed.trim())
          throw new ValidationError("report", [{ path: "--failed", message: "say why the interval failed" }]);
        if (opts.failed !== undefined && opts.reason !== undefined)
          throw new ValidationError("report", [
            { path: "--reason", message: "--failed takes the reason of a failure: give one of them" },
          ]);
        const report: OutsideReport =
          opts.failed !== undefined
            ? { outcome: "failed", reason: opts.failed.trim() }
            : { outcome: "succeeded", ...(opts.reason?.trim() ? { reason: opts.reason.trim() } : {}) };
        const id = taskIdArg(key);
        await withSession(globals(), "write", async ({ log, projection }) => {
          const task = projection.tasks.get(id);
          const date = task ? intervalArg(opts.interval, task) : instantArg(opts.interval, "--interval");
          const r = await reportInterval(log, projection, id, date, report, { by: defaultActor("cli") });
          const message = describeOutsideReport(r);
          if (opts.json) {
            const { writes: _writes, ...rest } = r;
            console.log(toJson({ ...rest, message }));
          } else console.log(r.position >= 0n ? `${message} (position ${r.position})` : message);
        });
      },
    );
}
