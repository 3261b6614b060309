import {
  dateArg,
  formatTaskKey,
  type RunState,
  runIdOn,
  runNextSteps,
  type SchedulerProjection,
  ValidationError,
} from "@chronolog/core";
import {
  criticalPath,
  describeRun,
  listRuns,
  NotFoundError,
  readRun,
  rerun,
  trigger,
} from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { canRead, readLimit, requireProjects, requireReadable, runReadable } from "../auth.js";
import { needsToken } from "../openapi.js";
import { atQuery } from "../read-view.js";
import * as S from "../schemas.js";
import { toJson } from "../state.js";
import type { RouteDeps } from "./deps.js";
import { json, jsonText, optionalBody, optionalJson } from "./http.js";
import { projectOf, runIdParam } from "./params.js";

/** The projects a run touches: its workflow's, and every task's it holds. */
function runProjects(projection: SchedulerProjection, run: RunState): string[] {
  const project = projection.workflows.get(run.workflow)?.project;
  return [...(project ? [project] : []), ...run.tasks.map(projectOf)];
}

/** How long `?wait=` may hold a request: `30s`, `500ms`, `2m` or plain seconds; at most 120 s. */
function waitMs(text: string | undefined): number {
  if (text === undefined) return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  if (!m)
    throw new ValidationError("wait", [
      { path: "", message: `"${text}" is not a duration like 30s or 500ms` },
    ]);
  const n = Number(m[1]) * (m[2] === "ms" ? 1 : m[2] === "m" ? 60_000 : 1000);
  return Math.min(n, 120_000);
}

const tryQuery = z.coerce.number().int().min(1).optional();
const RunQuery = atQuery.extend({ wait: z.string().optional(), try: tryQuery });
const TriggerBody = z.object({
  logicalDate: z.string().optional(),
  params: z.record(z.string(), z.string()).optional(),
  /** Decide and return the plan, writing nothing. */
  dryRun: z.boolean().optional(),
});
const RerunBody = z.object({ failedOnly: z.boolean().optional(), dryRun: z.boolean().optional() });

/** Workflow runs: the list, one run (waited for), its critical path; trigger one, rerun one. */
export function runRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  app.openapi(
    createRoute({
      method: "get",
      path: "/runs",
      operationId: "listRuns",
      security: needsToken,
      summary: "workflow runs, newest logical date first, each with its summary and why it waits",
      request: { query: atQuery.extend({ workflow: z.string().optional() }) },
      responses: { 200: json(z.array(S.Run), "runs"), ...S.problemResponses(401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const { workflow, at } = c.req.valid("query");
      const v = await d.readView(c, at);
      // A retired workflow is no longer declared, and its runs are still there to read.
      if (
        workflow !== undefined &&
        !v.projection.workflows.has(workflow) &&
        !v.projection.workflowRevisions.has(workflow)
      )
        throw new NotFoundError(`no workflow ${workflow} is declared`);
      const wf = workflow === undefined ? undefined : v.projection.workflows.get(workflow);
      if (wf) requireReadable(caller, [wf.project], "a workflow's runs");
      const readable = (name: string) => canRead(caller, v.projection.workflows.get(name)?.project ?? "");
      const limit = readLimit(caller);
      // A run holding a task of a project the token may not read is left out, as GET /runs/{id}
      // refuses it.
      const runs = listRuns(v.projection, workflow)
        .filter((r) => readable(r.workflow) && (limit === null || runReadable(limit, r)))
        .map((r) => ({
          ...r,
          nextSteps: runNextSteps(v.projection.tasks, r),
        }));
      return jsonText(c, toJson(runs));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/runs/{id}",
      operationId: "getRun",
      security: needsToken,
      summary: "one run with its tries and instances; wait=30s holds the request until it finishes",
      request: { params: runIdParam, query: RunQuery },
      responses: { 200: json(S.RunDetail, "the run"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const runId = runIdOn(state.projection, c.req.valid("param").id, "id");
      const q = c.req.valid("query");
      if (q.at !== undefined && q.wait !== undefined)
        throw new ValidationError("wait", [
          { path: "", message: "a run as of a position does not change: wait or at, not both" },
        ]);
      // Before any wait: a run of a workflow the token may not read is refused at once.
      const workflow = state.projection.workflows.get(runId.slice(0, runId.lastIndexOf("@")));
      if (workflow) requireReadable(caller, [workflow.project], "a run");
      const deadline = d.now() + waitMs(q.wait);
      for (; q.at === undefined; ) {
        const run = state.projection.runs.get(runId);
        if (!run && !q.wait) break;
        if (run && run.status !== "running") break;
        if (d.now() >= deadline) break;
        await state.changed(Math.min(1000, deadline - d.now()));
      }
      const v = await d.readView(c, q.at);
      const view = await describeRun(v.log, v.projection, runId, q.try);
      requireReadable(caller, runProjects(v.projection, view.run), "a run");
      return jsonText(
        c,
        toJson({
          ...view,
          blockedBy: view.summary.waiting,
          nextSteps: runNextSteps(v.projection.tasks, view.run),
        }),
      );
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/runs/{id}/critical-path",
      operationId: "getCriticalPath",
      security: needsToken,
      summary: "the chain of last-parent-to-finish links of a try, with durations",
      request: { params: runIdParam, query: atQuery.extend({ try: tryQuery }) },
      responses: { 200: json(z.unknown(), "the critical path"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const runId = runIdOn(state.projection, c.req.valid("param").id, "id");
      const q = c.req.valid("query");
      const v = await d.readView(c, q.at);
      const view = await describeRun(v.log, v.projection, runId, q.try);
      requireReadable(caller, runProjects(v.projection, view.run), "a run");
      const parentsOf = (t: string) => (v.projection.tasks.get(t)?.parents ?? []).map(formatTaskKey);
      return jsonText(c, toJson(criticalPath(view, parentsOf)));
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/workflows/{name}/runs",
      operationId: "triggerRun",
      security: needsToken,
      summary:
        "trigger exactly one run of a workflow outside its schedule, with params; logicalDate takes a day (the one interval that starts on it in the workflow's zone) or an instant; dryRun returns the plan and writes nothing",
      request: { params: z.object({ name: z.string() }), body: optionalBody(TriggerBody) },
      responses: {
        200: json(z.unknown(), "the run started (or, dry, to start): its try, tasks and interval"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const { name } = c.req.valid("param");
      const body = await optionalJson(c, TriggerBody);
      const logicalDate =
        body.logicalDate === undefined ? undefined : dateArg(body.logicalDate, "logicalDate").text;
      const log = d.writer(caller);
      const wp = await state.writeProjection();
      // Checked on the projection the trigger is decided on: the workflow's project and its tasks'.
      const wf = wp.workflows.get(name);
      if (!wf) throw new NotFoundError(`no workflow ${name} is declared`);
      const tasks = [...wp.tasks.values()].filter((t) => t.spec.workflow === name && t.status !== "retired");
      requireProjects(caller, [wf.project, ...tasks.map((t) => t.key.project)], "trigger workflows");
      const r = await trigger(log, wp, name, logicalDate, body.params ?? {}, d.now(), {
        dryRun: !!body.dryRun,
      });
      return jsonText(c, toJson(r));
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/runs/{id}/rerun",
      operationId: "rerun",
      security: needsToken,
      summary:
        "re-execute a finished run: all of it, or (failedOnly) what did not succeed and below; dryRun returns the plan and writes nothing",
      request: { params: runIdParam, body: optionalBody(RerunBody) },
      responses: {
        200: json(z.unknown(), "the run's new try: the tasks rerun and kept"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const runId = runIdOn(state.projection, c.req.valid("param").id, "id");
      const body = await optionalJson(c, RerunBody);
      const log = d.writer(caller);
      const wp = await state.writeProjection();
      // The run as the projection holds it, or (once it has left memory) as its stream does: a
      // run is checked the same either way, by its workflow's project and every task's it holds.
      const run = wp.runs.get(runId) ?? (await readRun(state.log, runId)).run;
      if (!run) throw new NotFoundError(`no run ${runId} is in the log`);
      requireProjects(caller, runProjects(wp, run), "rerun runs");
      const r = await rerun(log, wp, runId, !!body.failedOnly, { dryRun: !!body.dryRun });
      return jsonText(c, toJson(r));
    },
  );
  return app;
}
