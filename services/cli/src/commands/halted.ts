import { describeHalted, type HaltedCommand, ValidationError } from "@chronolog/core";
import { actOnInterval, requireTask } from "@chronolog/scheduler";
import type { Command } from "commander";
import { intervalArg } from "../args.js";
import { type DataDirOptions, defaultActor } from "../data-dir.js";
import { toJson } from "../edge.js";
import { taskIdArg, withSession } from "../projection.js";

/** `retry` and `mark`: the ways out of a halted interval, besides `attempt abandon`. */
export function registerHaltedCommands(program: Command, globals: () => DataDirOptions): void {
  const act = async (
    key: string,
    interval: string | undefined,
    command: HaltedCommand,
    json: boolean | undefined,
  ): Promise<void> => {
    const id = taskIdArg(key);
    await withSession(globals(), "write", async ({ log, projection }) => {
      const date = interval === undefined ? undefined : intervalArg(interval, requireTask(projection, id));
      const r = await actOnInterval(log, projection, id, date, command, { by: defaultActor("cli") });
      const message = describeHalted(r, command);
      if (json) {
        const { writes: _writes, ...rest } = r;
        console.log(toJson({ ...rest, message }));
      } else console.log(`${message} (position ${r.position})`);
    });
  };

  program
    .command("retry")
    .description(
      "run a halted interval (failed, abandoned, upstream_failed or cancelled) again: a new attempt with a fresh retry budget",
    )
    .argument("<task>", "project/account/name[/partition]")
    .option(
      "--interval <date>",
      "the interval: its logical date, or a day (the interval that starts on it in the task's zone); default: the one the task stands at",
    )
    .option("--reason <text>", "why, recorded in the event")
    .option("--json", "print JSON")
    .action(async (key: string, opts: { interval?: string; reason?: string; json?: boolean }) => {
      await act(
        key,
        opts.interval,
        { kind: "retry", ...(opts.reason ? { reason: opts.reason } : {}) },
        opts.json,
      );
    });

  program
    .command("mark")
    .description(
      "mark an interval succeeded or skipped by hand, with a reason: it counts as done for its children",
    )
    .argument("<task>", "project/account/name[/partition]")
    .option(
      "--interval <date>",
      "the interval: its logical date, or a day (the interval that starts on it in the task's zone); default: the one the task stands at",
    )
    .option("--succeeded", "mark it succeeded")
    .option("--skipped", "mark it skipped")
    .option("--reason <text>", "why (required), recorded in the event")
    .option("--json", "print JSON")
    .action(
      async (
        key: string,
        opts: { interval?: string; succeeded?: boolean; skipped?: boolean; reason?: string; json?: boolean },
      ) => {
        const issues = [];
        if (!!opts.succeeded === !!opts.skipped)
          issues.push({ path: "--succeeded/--skipped", message: "give one of --succeeded or --skipped" });
        if (!opts.reason?.trim())
          issues.push({ path: "--reason", message: "say why the interval is marked" });
        if (issues.length > 0) throw new ValidationError("mark", issues);
        await act(
          key,
          opts.interval,
          {
            kind: "mark",
            outcome: opts.succeeded ? "success" : "skipped",
            reason: (opts.reason ?? "").trim(),
          },
          opts.json,
        );
      },
    );
}
