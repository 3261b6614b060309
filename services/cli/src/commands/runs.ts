import {
  counted,
  formatTaskKey,
  type NextStep,
  RUN_TASK_STATES,
  type RunSummary,
  runIdOn,
  runNextSteps,
  ValidationError,
} from "@chronolog/core";
import { criticalPath, describeRun, listRuns, NotFoundError, rerun, trigger } from "@chronolog/scheduler";
import type { Command } from "commander";
import { runIdArg } from "../args.js";
import type { DataDirOptions } from "../data-dir.js";
import { toJson } from "../edge.js";
import { listing, short, table } from "../format.js";
import { runLines } from "../plans.js";
import { type AsOfFlags, addAsOfOptions, withReadSession, withSession } from "../projection.js";

function parseParams(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf("=");
    if (eq <= 0) throw new ValidationError("--param", [{ path: "", message: `"${p}" is not key=value` }]);
    out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}

/** A run's tasks by state: "success 1, failed 1, pending 1". */
const countsText = (s: RunSummary) =>
  RUN_TASK_STATES.filter((k) => s.counts[k] > 0)
    .map((k) => `${k} ${s.counts[k]}`)
    .join(", ") || "-";

/** A run's next steps, one line per halted task: its retry command, or its mark command. */
function stepsInWords(steps: readonly NextStep[]): string[] {
  const out: string[] = [];
  for (const s of steps) {
    if (s.action !== "retry") continue;
    const skip = steps.find((x) => x.task === s.task && x.action === "mark_skipped");
    out.push(`${s.task} halted: ${s.command}${skip ? `, or ${skip.command}` : ""}`);
  }
  return out;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

export function registerRunCommands(program: Command, globals: () => DataDirOptions): void {
  addAsOfOptions(program.command("runs"))
    .description("workflow runs (one workflow, one logical date): in progress and recent")
    .argument("[workflow]", "only this workflow")
    .option("--json", "print JSON")
    .action(async (workflow: string | undefined, opts: { json?: boolean } & AsOfFlags) => {
      await withReadSession(globals(), opts, async ({ projection }) => {
        // A retired workflow is no longer declared, and its runs are still there to read.
        if (
          workflow !== undefined &&
          !projection.workflows.has(workflow) &&
          !projection.workflowRevisions.has(workflow)
        )
          throw new NotFoundError(`no workflow ${workflow} is declared`);
        const runs = listRuns(projection, workflow).map((r) => ({
          ...r,
          nextSteps: runNextSteps(projection.tasks, r),
        }));
        if (opts.json) {
          console.log(toJson(runs));
          return;
        }
        console.log(
          listing(
            [
              "RUN",
              "STATE",
              "TRY",
              "TRIGGER",
              "TASKS",
              "ENDED",
              "STARTED",
              "FINISHED",
              "TASK STATES",
              "WHY IT WAITS",
            ],
            runs.map((r) => [
              r.runId,
              r.summary.state,
              String(r.try),
              r.trigger,
              String(r.summary.total),
              String(r.summary.ended),
              short(r.startedAt),
              short(r.finishedAt),
              countsText(r.summary),
              [...r.summary.waiting, ...stepsInWords(r.nextSteps)].join("; ") || "-",
            ]),
            workflow === undefined ? "no runs" : `no runs of workflow ${workflow}`,
          ),
        );
      });
    });

  addAsOfOptions(program.command("run"))
    .description("one run with its tries and instances; --critical-path explains a try's wall time")
    .argument(
      "<run>",
      "run id, WORKFLOW@LOGICAL_DATE as `chronolog runs` prints it (e.g. etl@2026-11-30T02:00Z)",
    )
    .option("--try <n>", "show this try of the run (default: the latest)")
    .option("--critical-path", "the chain of last-parent-to-finish links, with durations")
    .option("--json", "print JSON")
    .action(
      async (runText: string, opts: { try?: string; criticalPath?: boolean; json?: boolean } & AsOfFlags) => {
        runIdArg(runText); // (checked before the log is opened)
        const tryNumber = opts.try === undefined ? undefined : Number(opts.try);
        if (tryNumber !== undefined && (!Number.isInteger(tryNumber) || tryNumber < 1))
          throw new ValidationError("--try", [
            { path: "", message: `takes a try number, 1 or more, not "${opts.try}"` },
          ]);
        await withReadSession(globals(), opts, async ({ log, projection }) => {
          const runId = runIdOn(projection, runText);
          const view = await describeRun(log, projection, runId, tryNumber);
          const parentsOf = (t: string) => (projection.tasks.get(t)?.parents ?? []).map(formatTaskKey);
          if (opts.criticalPath) {
            const path = criticalPath(view, parentsOf);
            if (opts.json) {
              console.log(toJson(path));
              return;
            }
            console.log(`critical path of ${runId}, try ${path.try}:`);
            for (const l of path.links) {
              const retries = l.attempts > 1 ? `, ${l.attempts} attempts` : "";
              console.log(
                `  ${l.task.padEnd(40)} ${seconds(l.durationMs).padStart(9)}   (waited ${seconds(l.waitMs)} for it to start${retries})`,
              );
            }
            console.log(
              `path ${seconds(path.pathMs)}; try wall time ${seconds(path.wallMs)}; gap ${seconds(path.gapMs)}`,
            );
            return;
          }
          if (opts.json) {
            console.log(toJson({ ...view, nextSteps: runNextSteps(projection.tasks, view.run) }));
            return;
          }
          const r = view.run;
          const latest = view.try === view.tries.length;
          console.log(
            `run ${r.runId}: ${view.tries.at(-1)?.status ?? r.status}, ${counted(view.tries.length, "try", "tries")}, first started ${short(r.firstStartedAt)}`,
          );
          console.log(`${latest ? "tasks" : `try ${view.try}'s tasks`} ${countsText(view.summary)}`);
          for (const b of view.summary.waiting) console.log(`waiting: ${b}`);
          if (latest)
            for (const line of stepsInWords(runNextSteps(projection.tasks, r))) console.log(`next: ${line}`);
          if (Object.keys(r.params).length > 0) console.log(`params ${toJson(r.params)}`);
          console.log(
            table(
              ["TRY", "TRIGGER", "BY", "STARTED", "FINISHED", "STATE", "TASKS"],
              view.tries.map((t) => [
                String(t.try),
                t.trigger,
                t.actor ?? "-",
                short(t.startedAt),
                short(t.finishedAt),
                t.status,
                String(t.tasks.length),
              ]),
            ),
          );
          console.log(`\ntry ${view.try}${latest ? "" : ` of ${view.tries.length}`}:`);
          console.log(
            table(
              ["TASK", "STATE", "ATTEMPTS", "STARTED", "ENDED", "WHY"],
              view.instances.map(({ task, state, kept, instance, attempts }) => {
                const first = attempts[0];
                const last = attempts.at(-1);
                const mark = latest
                  ? (instance as { marked?: { outcome: string } | null } | undefined)?.marked
                  : null;
                const shownState = kept ? `${state} (kept)` : state;
                return [
                  task,
                  mark ? `${shownState} (marked)` : shownState,
                  last
                    ? first === last
                      ? last.budgetText
                      : `${first?.attempt}-${last.attempt}, the last ${last.budgetText}`
                    : "-",
                  first?.startedAt ?? "-",
                  last?.endedAt ?? "-",
                  kept
                    ? "not run again in this try: its earlier outcome stands"
                    : state === "pending"
                      ? "no attempt in this try yet"
                      : latest
                        ? (instance?.reason ?? last?.endReason ?? "")
                        : (last?.endReason ?? ""),
                ];
              }),
            ),
          );
        });
      },
    );

  program
    .command("rerun")
    .description(
      "re-execute a finished run: all of it, or with --failed only what did not succeed and its descendants",
    )
    .argument("<run>", "run id, WORKFLOW@LOGICAL_DATE (e.g. etl@2026-11-30T02:00Z)")
    .option("--failed", "only the failed, upstream_failed and cancelled instances")
    .option("--dry-run", "print what it would rerun and join, and write nothing")
    .action(async (runText: string, opts: { failed?: boolean; dryRun?: boolean }) => {
      runIdArg(runText); // (checked before the log is opened)
      await withSession(globals(), "write", async ({ log, projection }) => {
        const runId = runIdOn(projection, runText);
        const r = await rerun(log, projection, runId, !!opts.failed, { dryRun: !!opts.dryRun });
        for (const line of runLines(r)) console.log(line);
      });
    });

  program
    .command("trigger")
    .description("start a run of a workflow outside its schedule")
    .argument("<workflow>", "workflow name")
    .option(
      "--logical-date <date>",
      "the interval to run: an instant, or a day (the one interval that starts on it in the workflow's zone); default: the latest that has ended",
    )
    .option("--dry-run", "print the run it would start, and write nothing")
    .option(
      "--param <key=value>",
      "a parameter templates see as params.KEY (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .action(async (workflow: string, opts: { logicalDate?: string; param: string[]; dryRun?: boolean }) => {
      const params = parseParams(opts.param);
      await withSession(globals(), "write", async ({ log, projection }) => {
        const r = await trigger(log, projection, workflow, opts.logicalDate, params, Date.now(), {
          dryRun: !!opts.dryRun,
        });
        for (const line of runLines(r)) console.log(line);
      });
    });
}
