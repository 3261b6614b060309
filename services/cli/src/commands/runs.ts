import { currentAttempt, formatTaskKey, ValidationError } from "@chronolog/core";
import { criticalPath, describeRun, listRuns, NotFoundError, rerun, trigger } from "@chronolog/scheduler";
import type { Command } from "commander";
import { instantArg, runIdArg } from "../args.js";
import type { DataDirOptions } from "../data-dir.js";
import { toJson } from "../edge.js";
import { short, table } from "../format.js";
import { withSession } from "../projection.js";

function parseParams(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf("=");
    if (eq <= 0) throw new ValidationError("--param", [{ path: "", message: `"${p}" is not key=value` }]);
    out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

export function registerRunCommands(program: Command, globals: () => DataDirOptions): void {
  program
    .command("runs")
    .description("workflow runs (one workflow, one logical date): in progress and recent")
    .argument("[workflow]", "only this workflow")
    .option("--json", "print JSON")
    .action(async (workflow: string | undefined, opts: { json?: boolean }) => {
      await withSession(globals(), "read", async ({ projection }) => {
        if (workflow !== undefined && !projection.workflows.has(workflow))
          throw new NotFoundError(`no workflow ${workflow} is declared`);
        const runs = listRuns(projection, workflow);
        if (opts.json) {
          console.log(toJson(runs));
          return;
        }
        console.log(
          table(
            ["RUN", "STATE", "TRIGGER", "TASKS", "DONE", "STARTED", "FINISHED"],
            runs.map((r) => [
              r.runId,
              r.status,
              r.trigger,
              String(r.tasks.length),
              String(Object.values(r.outcomes).filter((o) => o === "success").length),
              short(r.startedAt),
              short(r.finishedAt),
            ]),
          ),
        );
      });
    });

  program
    .command("run")
    .description("one run with its instances; --critical-path explains its wall time")
    .argument(
      "<run>",
      "run id, WORKFLOW@LOGICAL_DATE as `chronolog runs` prints it (e.g. etl@2026-11-30T02:00Z)",
    )
    .option("--critical-path", "the chain of last-parent-to-finish links, with durations")
    .option("--json", "print JSON")
    .action(async (runText: string, opts: { criticalPath?: boolean; json?: boolean }) => {
      const runId = runIdArg(runText);
      await withSession(globals(), "read", async ({ log, projection }) => {
        const view = await describeRun(log, projection, runId);
        const parentsOf = (t: string) => (projection.tasks.get(t)?.spec.parents ?? []).map(formatTaskKey);
        if (opts.criticalPath) {
          const path = criticalPath(view, parentsOf);
          if (opts.json) {
            console.log(toJson(path));
            return;
          }
          console.log(`critical path of ${runId}:`);
          for (const l of path.links) {
            console.log(
              `  ${l.task.padEnd(40)} ${seconds(l.durationMs).padStart(9)}   (waited ${seconds(l.waitMs)} for it to start)`,
            );
          }
          console.log(
            `path ${seconds(path.pathMs)}; run wall time ${seconds(path.wallMs)}; gap ${seconds(path.gapMs)}`,
          );
          return;
        }
        if (opts.json) {
          console.log(toJson(view));
          return;
        }
        const r = view.run;
        console.log(
          `run ${r.runId}: ${r.status} (${r.trigger}), started ${short(r.startedAt)}, finished ${short(r.finishedAt)}`,
        );
        if (Object.keys(r.params).length > 0) console.log(`params ${toJson(r.params)}`);
        console.log(
          table(
            ["TASK", "STATE", "ATTEMPT", "STARTED", "ENDED", "WHY"],
            view.instances.map(({ task, instance }) => {
              const a = instance && currentAttempt(instance);
              return [
                task,
                instance?.status ?? "pending",
                a ? String(a.attempt) : "-",
                a?.startedAt ?? "-",
                a?.endedAt ?? "-",
                instance?.reason ?? a?.endReason ?? "",
              ];
            }),
          ),
        );
      });
    });

  program
    .command("rerun")
    .description(
      "re-execute a finished run: all of it, or with --failed only what did not succeed and its descendants",
    )
    .argument("<run>", "run id, WORKFLOW@LOGICAL_DATE (e.g. etl@2026-11-30T02:00Z)")
    .option("--failed", "only the failed, upstream_failed and cancelled instances")
    .action(async (runText: string, opts: { failed?: boolean }) => {
      const runId = runIdArg(runText);
      await withSession(globals(), "write", async ({ log, projection }) => {
        const r = await rerun(log, projection, runId, !!opts.failed);
        console.log(`rerunning ${r.tasks.length} tasks of ${runId}: ${r.tasks.join(", ")}`);
      });
    });

  program
    .command("trigger")
    .description("start a run of a workflow outside its schedule")
    .argument("<workflow>", "workflow name")
    .option("--logical-date <instant>", "the interval to run (default: the latest that has ended)")
    .option(
      "--param <key=value>",
      "a parameter templates see as params.KEY (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .action(async (workflow: string, opts: { logicalDate?: string; param: string[] }) => {
      const params = parseParams(opts.param);
      await withSession(globals(), "write", async ({ log, projection }) => {
        const logicalDate =
          opts.logicalDate === undefined ? undefined : instantArg(opts.logicalDate, "--logical-date");
        const r = await trigger(log, projection, workflow, logicalDate, params, Date.now());
        console.log(`started run ${r.runId} (${r.tasks.length} tasks)`);
      });
    });
}
