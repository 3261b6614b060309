import { existsSync, readFileSync, statSync } from "node:fs";
import {
  type AttemptView,
  counted,
  type DeclarationSource,
  explainTask,
  formatDeclarationIssue,
  lastLineOf,
  parseDeclarationText,
  SchedulerProjection,
  ValidationError,
} from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import {
  type BackfillPlan,
  backfill,
  backfillProgress,
  cancelBackfill,
  catchUp,
  checkDeclaration,
  declare,
  NotFoundError,
  pauseTask,
  resumeTask,
  retireTask,
  retireWorkflow,
  StateError,
  taskAttempts,
  taskHistory,
} from "@chronolog/scheduler";
import cliProgress from "cli-progress";
import type { Command } from "commander";
import { priorityArg, secondsArg } from "../args.js";
import { type DataDirOptions, logFileOf, logUrlOf, parseLogUrl } from "../data-dir.js";
import { CliError, printable, toJson } from "../edge.js";
import { eventLine } from "../event-line.js";
import { listing, short } from "../format.js";
import { backfillLines, cancelLines } from "../plans.js";
import { type AsOfFlags, addAsOfOptions, taskIdArg, withReadSession, withSession } from "../projection.js";

/** What the first unfinished task of a backfill waits for, in `why`'s words. */
function backfillWaitsFor(projection: SchedulerProjection, plan: BackfillPlan): string {
  for (const t of plan.targets) {
    const task = projection.tasks.get(t.task);
    if (!task || task.backfill?.backfillId !== t.backfillId) continue;
    const why = explainTask(projection, t.task, Date.now());
    return `${t.task} ${why.condition}: ${why.reasons[0] ?? ""}`;
  }
  return "";
}

/** Whether the log exists (a network log is taken to). */
function logExists(options: DataDirOptions): boolean {
  return parseLogUrl(logUrlOf(options)) !== null || existsSync(logFileOf(options));
}

function readSources(files: readonly string[]): DeclarationSource[] {
  return files.map((file) => {
    let text: string;
    try {
      if (file !== "-" && statSync(file).isDirectory())
        throw new CliError(
          `${file} is a directory: name the declaration files in it (e.g. ${file}/*.yaml)`,
          2,
        );
      text = file === "-" ? readFileSync(0, "utf8") : readFileSync(file, "utf8");
    } catch (error) {
      if (error instanceof CliError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      const why =
        code === "ENOENT"
          ? "no such file"
          : code === "EACCES"
            ? "permission denied"
            : (error as Error).message;
      throw new CliError(`cannot read ${file}: ${why}`, 2);
    }
    return parseDeclarationText(text, { filename: file === "-" ? "<stdin>" : file });
  });
}

/** Lines for standard output, written a block of about 64 KB at a time. */
class LineBlocks {
  private text = "";

  line(line: string): void {
    this.text += `${line}\n`;
    if (this.text.length >= 65_536) this.end();
  }

  end(): void {
    if (this.text !== "") process.stdout.write(this.text);
    this.text = "";
  }
}

/** Every logical date the task has an attempt stream for, from its own stream. */

export function registerTaskCommands(program: Command, globals: () => DataDirOptions): void {
  program
    .command("declare")
    .description("validate declaration files (YAML or JSON) and record what changed, whole or not at all")
    .argument("<files...>", "declaration files; - reads standard input")
    .option("--revive", "declare retired tasks again (they are revived) instead of refusing them")
    .option("--check", "validate against the current state and print what would change; write nothing")
    .option("--json", "print the outcome as JSON")
    .action(async (files: string[], opts: { json?: boolean; revive?: boolean; check?: boolean }) => {
      const sources = readSources(files);
      const revive = opts.revive ? { revive: true } : {};
      // A refused declaration says only why (its errors): nothing was declared, so what its
      // warnings foretell ("the task will wait for it") does not happen.
      let outcome: Awaited<ReturnType<typeof declare>>;
      if (!opts.check)
        outcome = await withSession(globals(), "write", ({ log, projection }) =>
          declare(log, projection, sources, Date.now(), revive),
        );
      else if (!logExists(globals()))
        // No embedded log yet: checked against nothing declared.
        outcome = checkDeclaration(new SchedulerProjection(), sources, Date.now(), revive);
      else
        outcome = await withSession(globals(), "read", async ({ projection }) =>
          checkDeclaration(projection, sources, Date.now(), revive),
        );
      for (const w of outcome.warnings) process.stderr.write(`${formatDeclarationIssue(w)}\n`);
      if (opts.json) {
        console.log(toJson(opts.check ? { ...outcome, check: true } : outcome));
        return;
      }
      // A line per connection, workflow and task, written in blocks: a catalogue of 100,000
      // tasks prints 100,000 lines, which one write each made a cost of their own.
      const out = new LineBlocks();
      // Said first, where the lines go: a log of standard output alone reads as a check.
      if (opts.check) out.line("check, nothing written: a declare would record");
      for (const c of outcome.connections) out.line(`connection ${c.name}: ${c.outcome}`);
      for (const w of outcome.workflows) out.line(`workflow ${w.name}: ${w.outcome}`);
      for (const t of outcome.tasks) {
        out.line(`task ${t.task}: ${t.outcome}`);
        for (const c of t.changes) out.line(`  ${c.field}: ${toJson(c.from)} -> ${toJson(c.to)}`);
      }
      out.end();
    });

  for (const [name, verb] of [
    ["pause", "stop dispatching a task (a running attempt finishes)"],
    ["resume", "resume a paused task"],
  ] as const) {
    program
      .command(name)
      .description(verb)
      .argument("<task>", "project/account/name[/partition]")
      .option("--reason <text>", "why, recorded in the event")
      .action(async (key: string, opts: { reason?: string }) => {
        const id = taskIdArg(key);
        await withSession(globals(), "write", async ({ log, projection }) => {
          const position =
            name === "pause"
              ? await pauseTask(log, projection, id, opts.reason)
              : await resumeTask(log, projection, id);
          console.log(`${id}: ${name === "pause" ? "paused" : "resumed"} (position ${position})`);
        });
      });
  }

  program
    .command("retire")
    .description(
      "retire a task for good: it never runs again and its children see it as retired; --workflow W retires a workflow and all its tasks at once",
    )
    .argument("[task]", "project/account/name[/partition]")
    .option("--workflow <name>", "retire this workflow and every task of it, in one atomic write")
    .option("--reason <text>", "why, recorded in the event")
    .action(async (key: string | undefined, opts: { reason?: string; workflow?: string }) => {
      if ((key === undefined) === (opts.workflow === undefined))
        throw new CliError(
          key === undefined
            ? "retire takes a task (project/account/name[/partition]) or --workflow NAME"
            : "retire takes a task or --workflow NAME, not both",
          2,
        );
      await withSession(globals(), "write", async ({ log, projection }) => {
        if (opts.workflow !== undefined) {
          const r = await retireWorkflow(log, projection, opts.workflow, opts.reason);
          console.log(
            `workflow ${r.workflow}: retired with ${counted(r.tasks.length, "task")} (position ${r.position})`,
          );
          for (const t of r.tasks) console.log(`task ${t}: retired`);
          return;
        }
        const id = taskIdArg(key as string);
        const position = await retireTask(log, projection, id, opts.reason);
        console.log(`${id}: retired (position ${position})`);
      });
    });
}

/** `history`, `attempts` and `backfill`. */
export function registerTaskHistoryCommands(program: Command, globals: () => DataDirOptions): void {
  addAsOfOptions(program.command("history"))
    .description("the task's events, with positions and actors: its stream and its attempt streams")
    .argument("<task>", "project/account/name[/partition]")
    .option("--json", "print one JSON object per line")
    .action(async (key: string, opts: { json?: boolean } & AsOfFlags) => {
      const id = taskIdArg(key);
      await withReadSession(globals(), opts, async (s) => {
        const events = await taskHistory(s.log, s.projection, id);
        for (const e of events) console.log(opts.json ? toJson(e) : eventLine(e));
      });
    });

  addAsOfOptions(program.command("attempts"))
    .description("every attempt of a task: number, token, worker, state, times, why it ended")
    .argument("<task>", "project/account/name[/partition]")
    .option(
      "--output",
      "also print each attempt's exit code, duration, output file and the tail of its stdout and stderr",
    )
    .option("--json", "print JSON")
    .action(async (key: string, opts: { json?: boolean; output?: boolean } & AsOfFlags) => {
      const id = taskIdArg(key);
      await withReadSession(globals(), opts, async (s) => {
        const rows: Array<Record<string, unknown>> = (await taskAttempts(s.log, s.projection, id)).map(
          ({ stream: _stream, ...r }) => r,
        );
        if (opts.json) {
          console.log(toJson(rows, 2));
          return;
        }
        console.log(
          listing(
            [
              "INTERVAL",
              "#",
              "BUDGET",
              "TOKEN",
              "WORKER",
              "STATE",
              "INTENDED",
              "STARTED",
              "ENDED",
              "WHY IT ENDED",
            ],
            rows.map((r) => [
              short(r.logicalDate as string),
              String(r.attempt),
              String(r.budgetText),
              String(r.token),
              String(r.workerId ?? "-"),
              String(r.status),
              short(r.intendedAt as string),
              short(r.startedAt as string | null),
              short(r.endedAt as string | null),
              String(r.endReason ?? "-"),
            ]),
            `${id} has no attempts yet`,
          ),
        );
        // A failed attempt's last line of stderr, without --output: usually what says why.
        if (!opts.output)
          for (const r of rows) {
            const last = lastLineOf(String(r.stderrTail ?? ""));
            if (r.status === "failed" && last)
              console.log(
                `${short(r.logicalDate as string)} attempt ${r.attempt}, last line of stderr: ${last}`,
              );
          }
        if (opts.output) {
          for (const r of rows) {
            console.log(
              `\n--- ${short(r.logicalDate as string)} attempt ${r.attempt}: exit code ${r.exitCode ?? "-"}, ${r.durationMs ?? "-"} ms${r.cacheHit ? " (cache hit)" : ""}`,
            );
            const file = r.outputFile as AttemptView["outputFile"];
            if (file)
              console.log(
                `output file ${file.path} (${counted(file.bytes, "byte")}, ${file.cutBytes} cut, sha256 ${file.sha256})${file.error ? `: stops short: ${file.error}` : ""}; chronolog logs prints it`,
              );
            // The tails quoted among the CLI's lines, their control characters escaped
            // (`chronolog logs` prints the output as it was written).
            if (r.stdoutTail)
              process.stdout.write(
                printable(`stdout:\n${r.stdoutTail}${String(r.stdoutTail).endsWith("\n") ? "" : "\n"}`),
              );
            if (r.stderrTail)
              process.stdout.write(
                printable(`stderr:\n${r.stderrTail}${String(r.stderrTail).endsWith("\n") ? "" : "\n"}`),
              );
          }
        }
      });
    });

  program
    .command("backfill")
    .description("re-run a range of intervals: set the task (and with --downstream its subtree) back")
    .argument("<task>", "project/account/name[/partition] (with --cancel: or a backfill's id)")
    .option(
      "--from <date>",
      "first interval: a day (2026-09-01: from the first interval that starts on it, in each task's zone) or an instant (2026-09-01T02:00Z)",
    )
    .option("--to <date>", "last interval, inclusive: a day (its intervals included) or an instant")
    .option("--downstream", "also reset every task below it")
    .option("--force", "also a range before the tasks' startDates, or a paused task")
    .option(
      "--priority <n>",
      "the priority its intervals compete for slots with, as a scheduled interval's (default: after every scheduled interval)",
    )
    .option("--dry-run", "print what it would reset and join (or cancel), and write nothing")
    .option(
      "--cancel",
      "cancel the backfill pending on the task (or the backfill named by its id): each task returns to where it stood before it",
    )
    .option("--reason <text>", "with --cancel: why, written with the cancel")
    .option("--detach", "return at once instead of showing progress")
    .option("--timeout <seconds>", "give up waiting after this long (exit 7; without it: wait until it ends)")
    .action(
      async (
        key: string,
        opts: {
          from?: string;
          to?: string;
          cancel?: boolean;
          reason?: string;
          downstream?: boolean;
          detach?: boolean;
          force?: boolean;
          dryRun?: boolean;
          priority?: string;
          timeout?: string;
        },
      ) => {
        if (opts.cancel) {
          await cancelBackfillCommand(globals(), key, opts);
          return;
        }
        if (opts.reason !== undefined)
          throw new ValidationError("backfill", [
            { path: "--reason", message: "goes with --cancel (a backfill itself takes no reason)" },
          ]);
        const missing = (["from", "to"] as const).filter((f) => opts[f] === undefined);
        if (missing.length > 0)
          throw new ValidationError("backfill", [
            { path: `--${missing[0]}`, message: "is required (or --cancel, to cancel a pending backfill)" },
          ]);
        const range = { from: opts.from as string, to: opts.to as string };
        const id = taskIdArg(key);
        const priority = opts.priority !== undefined ? priorityArg(opts.priority) : undefined;
        const timeout = opts.timeout !== undefined ? secondsArg(opts.timeout, "--timeout") : undefined;
        await withSession(globals(), "write", async ({ log, projection }) => {
          let cancelled: RecordedEvent | undefined;
          const plan = await backfill(log, projection, id, range.from, range.to, !!opts.downstream, {
            force: !!opts.force,
            dryRun: !!opts.dryRun,
            ...(priority !== undefined ? { priority } : {}),
          });
          for (const line of backfillLines(plan)) console.log(line);
          if (opts.detach || plan.dryRun || plan.targets.length === 0) return;
          const deadline = timeout !== undefined ? Date.now() + timeout * 1000 : Number.POSITIVE_INFINITY;
          const bar = process.stdout.isTTY
            ? new cliProgress.SingleBar(
                { format: "backfill [{bar}] {value}/{total} intervals  {eta_formatted}  {waiting}" },
                cliProgress.Presets.shades_classic,
              )
            : null;
          let progress = backfillProgress(projection, plan);
          bar?.start(progress.total, progress.done, { waiting: "" });
          let lastPrinted = -1;
          let movedAt = Date.now();
          let lastDone = progress.done;
          let lastWaiting = "";
          // Cancelled meanwhile (by another operator): said, and the wait ends.
          const hear = (e: RecordedEvent) => {
            if (
              e.type === "IntervalReset" &&
              e.data.reason === "backfill_cancelled" &&
              e.data.backfillId !== undefined &&
              plan.targets.some((t) => t.backfillId === e.data.backfillId)
            )
              cancelled ??= e;
          };
          while (
            !progress.finished &&
            progress.failed.length === 0 &&
            cancelled === undefined &&
            Date.now() < deadline
          ) {
            await new Promise((r) => setTimeout(r, 100));
            await catchUp(log, projection, hear);
            // Cancelled: its windows closed, which would count as done; what was done stands.
            if (cancelled !== undefined) break;
            progress = backfillProgress(projection, plan);
            if (progress.done !== lastDone) {
              lastDone = progress.done;
              movedAt = Date.now();
            }
            // Nothing moved for a while: say what the backfill waits for, as why would.
            const waiting = Date.now() - movedAt > 3000 ? backfillWaitsFor(projection, plan) : "";
            if (bar) bar.update(progress.done, { waiting: waiting ? `waiting: ${waiting}` : "" });
            else {
              if (waiting && waiting !== lastWaiting) console.log(`waiting: ${waiting}`);
              if (
                progress.done !== lastPrinted &&
                (progress.done === progress.total ||
                  progress.done - lastPrinted >= Math.max(1, Math.floor(progress.total / 10)))
              ) {
                console.log(`progress ${progress.done}/${progress.total}`);
                lastPrinted = progress.done;
              }
            }
            lastWaiting = waiting;
          }
          bar?.stop();
          if (cancelled?.type === "IntervalReset")
            throw new CliError(
              `backfill stopped: ${cancelled.data.backfillId} was cancelled by ${cancelled.metadata.actor}${cancelled.data.note ? `: ${cancelled.data.note}` : ""} (${progress.done}/${counted(progress.total, "interval")} done before it; the rest not run)`,
              6,
            );
          if (progress.failed.length > 0)
            throw new CliError(`backfill stopped: ${progress.failed.join("; ")}`, 6);
          if (!progress.finished)
            throw new CliError(
              `backfill not finished: ${progress.done}/${counted(progress.total, "interval")}`,
              7,
            );
          console.log(`backfill done: ${counted(progress.total, "interval")}`);
        });
      },
    );
}

/** A backfill's id, as `backfill` prints it and the API names it. */
const BACKFILL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `backfill TASK --cancel`: cancels the backfill pending on TASK (or the one named by its id),
 * on every task it walks, and prints what each does.
 */
async function cancelBackfillCommand(
  options: DataDirOptions,
  arg: string,
  opts: {
    from?: string;
    to?: string;
    downstream?: boolean;
    force?: boolean;
    priority?: string;
    detach?: boolean;
    timeout?: string;
    dryRun?: boolean;
    reason?: string;
  },
): Promise<void> {
  const stray = (["from", "to", "downstream", "force", "priority", "detach", "timeout"] as const).find(
    (f) => opts[f] !== undefined,
  );
  if (stray)
    throw new ValidationError("backfill", [
      {
        path: `--${stray}`,
        message: "does not go with --cancel (a cancel takes the whole pending backfill, at once)",
      },
    ]);
  await withSession(options, "write", async ({ log, projection }) => {
    // (An id as printed, or in capitals: ids are written in small letters.)
    let backfillId = arg.toLowerCase();
    if (!BACKFILL_ID.test(arg)) {
      let id: string;
      try {
        id = taskIdArg(arg);
      } catch {
        throw new ValidationError("backfill", [
          {
            path: "<task>",
            message: `${printable(arg)} is neither a task (project/account/name[/partition]) nor a backfill's id (as backfill printed it, 8-4-4-4-12 hexadecimal digits)`,
          },
        ]);
      }
      const task = projection.tasks.get(id);
      if (!task) throw new NotFoundError(`no task ${id} is declared`);
      const pending = task.backfill?.backfillId;
      if (!pending)
        throw new StateError(
          task.backfill
            ? `${id} walks a rerun's or a trigger's window, not a backfill: it ends with its run's interval ${task.backfill.until}, which backfill --cancel does not take back (it runs that one interval: let it, or hold it with chronolog pause ${id})`
            : `${id} has no backfill pending (chronolog task ${id} shows where it stands)`,
        );
      backfillId = pending;
    }
    const cancel = await cancelBackfill(log, projection, backfillId, {
      ...(opts.reason ? { reason: opts.reason } : {}),
      dryRun: !!opts.dryRun,
    });
    for (const line of cancelLines(cancel)) console.log(line);
  });
}
