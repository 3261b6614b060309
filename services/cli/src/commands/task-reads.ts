/*
 * The reads of a few tasks: `tasks`, `task` and `why`. A module of their own, apart from the
 * commands that declare and change tasks, so that a read loads neither the declaration's
 * validation (its YAML reader and schemas) nor the code of the writes (see commands.ts).
 */
import {
  budgetPlace,
  budgetText,
  counted,
  currentAttempt,
  describeDeadline,
  describePriority,
  explainTask,
  foldInstance,
  isExternal,
  shownPriority,
  shownTask,
  type TaskState,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import {
  instanceStreamsOf,
  renderProblem,
  requireTask,
  taskDeadline,
  taskPage,
  taskReports,
} from "@chronolog/scheduler";
import type { Command } from "commander";
import { type DataDirOptions, dataDirOf, logUrlOf, parseLogUrl } from "../data-dir.js";
import { CliError, toJson } from "../edge.js";
import { listing, short } from "../format.js";
import { type AsOfFlags, addAsOfOptions, taskIdArg, withReadAnswer, withReadSession } from "../projection.js";
import { schedulerHolder } from "../scheduler-holder.js";

/** A task's deadline standing in lines: the current interval's, its estimate, the last met late. */
function deadlineLines(d: ReturnType<typeof taskDeadline>, now: number): string[] {
  if (!d) return [];
  const out = [describeDeadline(d, now)];
  if (d.estimate.doneAt !== null && d.estimate.path.length > 0)
    out.push(
      `longest path left: ${d.estimate.path.map((s) => `${s.task} ${Math.round(s.ms / 1000)}s`).join(" -> ")}`,
    );
  if (d.estimate.unknown.length > 0) out.push(`no recorded durations yet: ${d.estimate.unknown.join(", ")}`);
  if (d.metLate) out.push(`${short(d.metLate.logicalDate)} met its ${d.metLate.text}`);
  return out;
}

/** `--limit`: a whole number above 0. */
function pageLimitArg(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1)
    throw new CliError(`--limit takes a whole number above 0, not "${text}"`, 2);
  return Number(text);
}

/**
 * The latest interval of the task marked by hand, in words (`2026-12-01T03:30Z skipped by ...:
 * why`), from the attempt streams of its latest MARKS_SHOWN intervals; none when none was marked.
 */
async function lastMark(log: EventLog, task: TaskState): Promise<string | null> {
  for (const stream of (await instanceStreamsOf(log, task)).reverse().slice(0, MARKS_SHOWN)) {
    const inst = foldInstance(await log.readStream(stream));
    if (inst?.marked)
      return `${short(inst.logicalDate)} ${inst.marked.outcome === "success" ? "succeeded" : "skipped"} by ${inst.marked.by} at ${short(inst.marked.at)}: ${inst.marked.reason}`;
  }
  return null;
}

const MARKS_SHOWN = 24;

/** `tasks`, `task` and `why`. */
export function registerTaskReadCommands(program: Command, globals: () => DataDirOptions): void {
  addAsOfOptions(program.command("tasks"))
    .description("list declared tasks with where each stands")
    .option("--limit <n>", "only the first N tasks (in key order); the next page starts --after the last")
    .option("--after <task>", "only the tasks whose key sorts after this one")
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean; limit?: string; after?: string } & AsOfFlags) => {
      const limit = opts.limit === undefined ? undefined : pageLimitArg(opts.limit);
      const page = {
        ...(limit !== undefined ? { limit } : {}),
        ...(opts.after !== undefined ? { after: taskIdArg(opts.after) } : {}),
      };
      // Every task: the whole projection. A page: its tasks alone, where the checkpoint says where.
      const { rows, more } =
        limit === undefined
          ? await withReadSession(globals(), opts, async ({ projection, now }) =>
              taskPage(projection, now, page),
            )
          : await withReadAnswer(globals(), opts, ({ projection, now, idsAfter }) =>
              taskPage(projection, now, page, idsAfter),
            );
      const last = rows.at(-1);
      if (more && last)
        process.stderr.write(`more tasks follow: chronolog tasks --limit ${limit} --after ${last.task}\n`);
      // Said after the listing (on stderr): the last line a person reads.
      const standing = rows.filter((r) => MOVING.has(r.condition)).length;
      const unscheduled = standing > 0 ? unscheduledListing(globals(), opts, standing) : undefined;
      if (opts.json) {
        console.log(toJson(rows));
        if (unscheduled) afterOutput(`${unscheduled}\n`);
        return;
      }
      console.log(
        listing(
          ["TASK", "STATUS", "NOW", "FINISHED", "NEXT INTERVAL", "DUE"],
          rows.map((r) => [
            r.task,
            r.status,
            r.condition,
            short(r.prevIntervalStart),
            short(r.logicalDate),
            short(r.nextRunDate),
          ]),
          "no tasks are declared",
        ),
      );
      if (unscheduled) afterOutput(`${unscheduled}\n`);
    });

  addAsOfOptions(program.command("task"))
    .description("show one task: its declaration, position and current instance")
    .argument("<task>", "project/account/name[/partition]")
    .option("--json", "print JSON")
    .action(async (key: string, opts: { json?: boolean } & AsOfFlags) => {
      const id = taskIdArg(key);
      const shown = await withReadAnswer(globals(), opts, async ({ log, projection, now }) => {
        const task = requireTask(projection, id);
        return {
          task,
          why: explainTask(projection, id, now, { renderProblem: renderProblem(projection) }),
          instance: projection.currentInstance(task) ?? null,
          reports: await taskReports(log, projection, id),
          deadline: taskDeadline(projection, task, now),
          priority: shownPriority(task, projection.weights),
          marked: await lastMark(log, task),
          now,
        };
      });
      const { task, why, instance, reports, deadline, priority, marked, now } = shown;
      const unscheduled = MOVING.has(why.condition)
        ? unscheduledReason(globals(), opts, why.condition)
        : undefined;
      if (opts.json) {
        console.log(
          toJson(
            {
              task: shownTask(task),
              priority,
              condition: why.condition,
              reasons: why.reasons,
              nextSteps: why.nextSteps,
              instance,
              ...(isExternal(task.spec) ? { reports } : {}),
              deadline,
              ...(unscheduled ? { scheduler: unscheduled } : {}),
            },
            2,
          ),
        );
        return;
      }
      console.log(`task        ${id}  (${task.status})`);
      console.log(
        `schedule    ${task.spec.cron} ${task.spec.timezone}, from ${short(task.spec.startDate)}${task.spec.catchup ? "" : ", no catch-up"}`,
      );
      console.log(
        `operator    ${task.spec.operator.type}${task.spec.connection ? ` on ${task.spec.connection}` : ""}`,
      );
      console.log(`queue       ${task.spec.queue ?? "- (the scheduler's own workers)"}`);
      console.log(
        `parents     ${task.parents.map((p) => `${p.project}/${p.account}/${p.name}/${p.partition}`).join(", ") || "-"}`,
      );
      console.log(`priority    ${describePriority(priority, !!task.backfill?.backfillId)}`);
      console.log(`finished    ${short(task.prevIntervalStart)}`);
      console.log(`next        ${short(task.logicalDate)} due ${short(task.nextRunDate)}`);
      if (task.backfill)
        console.log(
          task.backfill.backfillId
            ? `backfill    ${task.backfill.from ? `${short(task.backfill.from)} .. ` : "until "}${short(task.backfill.until)} (${task.backfill.backfillId})`
            : `rerun       ${short(task.backfill.until)} (a rerun's or a trigger's window)`,
        );
      console.log(`now         ${why.condition}: ${why.reasons.join("; ")}`);
      if (unscheduled) console.log(`scheduler   ${unscheduled}`);
      if (instance) {
        const a = currentAttempt(instance);
        const place = a
          ? budgetText(
              budgetPlace(
                instance.attempts,
                a.attempt,
                task.spec.retry.maxAttempts,
                instance.budgetFrom ?? 0,
              ),
            )
          : "-";
        console.log(
          `instance    ${instance.status}, attempt ${a?.attempt ?? "-"} (${a?.token ?? "-"}): ${a?.status ?? "-"}, ${place}`,
        );
      }
      for (const line of deadlineLines(deadline, now)) console.log(`deadline    ${line}`);
      if (marked) console.log(`marked      ${marked}`);
      for (const r of reports)
        console.log(
          `reported    ${short(r.logicalDate)} ${r.outcome} by ${r.by} at ${short(r.at)}${r.reason ? `: ${r.reason}` : ""}${r.standing === "held" ? " (held: an earlier interval is not in)" : ""}`,
        );
      for (const s of why.nextSteps) console.log(`next        ${s.command}`);
    });

  addAsOfOptions(program.command("why"))
    .description("why is this task (not) running?")
    .argument("<task>", "project/account/name[/partition]")
    .option("--json", "print JSON")
    .action(async (key: string, opts: { json?: boolean } & AsOfFlags) => {
      const id = taskIdArg(key);
      const { why, deadline, now } = await withReadAnswer(globals(), opts, ({ projection, now }) => {
        const why = explainTask(projection, id, now, { renderProblem: renderProblem(projection) });
        const task = projection.tasks.get(id);
        return { why, deadline: task ? taskDeadline(projection, task, now) : null, now };
      });
      const unscheduled = MOVING.has(why.condition)
        ? unscheduledReason(globals(), opts, why.condition)
        : undefined;
      if (opts.json)
        console.log(toJson({ ...why, deadline, ...(unscheduled ? { scheduler: unscheduled } : {}) }));
      else {
        console.log(`${id}: ${why.condition}`);
        for (const r of why.reasons) console.log(`  ${r}`);
        if (unscheduled) console.log(`  ${unscheduled}`);
        for (const line of deadlineLines(deadline, now)) console.log(`  deadline: ${line}`);
        if (why.nextSteps.length > 0) {
          console.log("next steps:");
          for (const s of why.nextSteps) console.log(`  ${s.command}`);
        }
      }
      if (why.condition === "unknown") process.exitCode = 4;
    });
}

/**
 * Where a task stands only while a scheduler moves it: an attempt out, one due now, an interval
 * ended whose completion the scheduler writes, a jump it makes.
 */
const MOVING = new Set(["running", "queued", "ready", "retry_wait", "succeeded", "skipped", "catching_up"]);

/**
 * Said by `why` on an embedded log that no scheduler runs (no `chronolog up` holds its data
 * directory, or the one that did was killed): nothing is started, run or settled until one does,
 * and an attempt shown running stands so only in the log. Nothing for a read of the past or of an
 * export, or of a shared log, whose schedulers run elsewhere.
 */
function unscheduledReason(options: DataDirOptions, asOf: AsOfFlags, condition: string): string | undefined {
  if (!unscheduled(options, asOf)) return undefined;
  return condition === "running" || condition === "queued"
    ? "no scheduler is running on this data directory: the attempt stands so in the log only; once chronolog up starts, one whose worker is gone runs again, or waits for an operator if its task may not run twice"
    : "no scheduler is running on this data directory: nothing starts or moves on until chronolog up does";
}

/** Whether a read is of the live embedded log of a data directory that no scheduler holds. */
function unscheduled(options: DataDirOptions, asOf: AsOfFlags): boolean {
  if (asOf.at !== undefined || asOf.asOf !== undefined || options.file !== undefined) return false;
  return parseLogUrl(logUrlOf(options)) === null && schedulerHolder(dataDirOf(options)) === null;
}

/** Said by `tasks` (on stderr) when `count` of the tasks listed stand where only a scheduler moves them. */
function unscheduledListing(options: DataDirOptions, asOf: AsOfFlags, count: number): string | undefined {
  if (!unscheduled(options, asOf)) return undefined;
  return `no scheduler is running on this data directory: ${counted(count, "task")} listed ${count === 1 ? "stands" : "stand"} where only a scheduler moves ${count === 1 ? "it" : "them"} (an attempt running or queued stands so in the log only); nothing starts or moves on until chronolog up does`;
}

/**
 * Writes `note` on stderr once what went to stdout before it is written: not at all when its
 * reader went away (`tasks | head`), which ends the command quietly.
 */
function afterOutput(note: string): void {
  process.stdout.write("", (error) => {
    if (!error) process.stderr.write(note);
  });
}
