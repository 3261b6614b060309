import { abandonAttempt, requireTask } from "@chronolog/scheduler";
import type { Command } from "commander";
import { intervalArg } from "../args.js";
import { type DataDirOptions, defaultActor } from "../data-dir.js";
import { taskIdArg, withSession } from "../projection.js";

export function registerAttemptCommands(program: Command, globals: () => DataDirOptions): void {
  const attempt = program.command("attempt").description("operator decisions on one attempt");
  attempt
    .command("abandon")
    .description(
      "abandon the current attempt of an interval (say, a task that is not idempotent whose worker lost its lease)",
    )
    .argument("<task>", "project/account/name[/partition]")
    .option(
      "--interval <date>",
      "the interval: its logical date, or a day (the interval that starts on it in the task's zone); default: the task's current one",
    )
    .option("--retry", "try again with a new attempt rather than stop at this interval")
    .option("--reason <text>", "why", "abandoned by an operator")
    .action(async (key: string, opts: { interval?: string; retry?: boolean; reason: string }) => {
      const id = taskIdArg(key);
      await withSession(globals(), "write", async ({ log, projection }) => {
        const r = await abandonAttempt(log, projection, id, {
          ...(opts.interval ? { interval: intervalArg(opts.interval, requireTask(projection, id)) } : {}),
          retry: !!opts.retry,
          reason: opts.reason,
          by: defaultActor("cli"),
        });
        console.log(
          `${id} ${r.logicalDate}: attempt ${r.attempt} abandoned${opts.retry ? "; a new attempt will be dispatched" : ""}`,
        );
      });
    });
}
