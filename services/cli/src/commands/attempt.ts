import { currentAttempt, instanceStream, isTerminal, parseInstant } from "@chronolog/core";
import { foldInstance, requireTask } from "@chronolog/scheduler";
import type { Command } from "commander";
import { type DataDirOptions, defaultActor } from "../data-dir.js";
import { CliError } from "../edge.js";
import { taskIdArg, withSession } from "../projection.js";

export function registerAttemptCommands(program: Command, globals: () => DataDirOptions): void {
  const attempt = program.command("attempt").description("operator decisions on one attempt");
  attempt
    .command("abandon")
    .description(
      "abandon the current attempt of an interval (say, a task that is not idempotent whose worker lost its lease)",
    )
    .argument("<task>", "project/account/name[/partition]")
    .option("--interval <instant>", "the interval (default: the task's current one)")
    .option("--retry", "try again with a new attempt rather than stop at this interval")
    .option("--reason <text>", "why", "abandoned by an operator")
    .action(async (key: string, opts: { interval?: string; retry?: boolean; reason: string }) => {
      const id = taskIdArg(key);
      await withSession(globals(), "write", async ({ log, projection }) => {
        const task = requireTask(projection, id);
        const date = opts.interval
          ? parseInstant(opts.interval, "--interval").toISOString()
          : task.logicalDate;
        const stream = instanceStream(task.key, date);
        const inst = foldInstance(await log.readStream(stream));
        const a = inst && currentAttempt(inst);
        if (!inst || !a) throw new CliError(`${id} has no attempt for ${date}`, 4);
        if (isTerminal(inst)) throw new CliError(`${id} ${date} has already ended (${inst.status})`, 3);
        await log.append(
          stream,
          [
            {
              type: "AttemptAbandoned",
              data: {
                attempt: a.attempt,
                token: a.token,
                reason: opts.reason,
                by: defaultActor("operator"),
                retry: !!opts.retry,
              },
            },
          ],
          { expectedRevision: inst.revision },
        );
        console.log(
          `${id} ${date}: attempt ${a.attempt} abandoned${opts.retry ? "; a new attempt will be dispatched" : ""}`,
        );
      });
    });
}
