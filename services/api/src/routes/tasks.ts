import {
  type DeadlineStanding,
  dateArg,
  describeCause,
  describeHalted,
  describeOutsideReport,
  type HaltedCommand,
  instantInput,
  intervalOn,
  shownPriority,
  shownTask,
} from "@chronolog/core";
import {
  actOnInterval,
  pauseTask,
  reportInterval,
  requireTask,
  resumeTask,
  retireTask,
  taskAttempts,
  taskDeadline,
  taskHistory,
  taskReports,
  taskRow,
} from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type Caller, canRead, readLimit, requireProjects, requireReadable } from "../auth.js";
import { needsToken } from "../openapi.js";
import { atQuery } from "../read-view.js";
import * as S from "../schemas.js";
import { toJson, toJsonWithBigints, wireEvent } from "../state.js";
import type { RouteDeps } from "./deps.js";
import { json, jsonText, optionalBody, optionalJson } from "./http.js";
import { projectOf, taskIdOf, taskKeyParam } from "./params.js";

const TaskListQuery = atQuery.extend({
  project: z.string().optional(),
  status: z.enum(["active", "paused", "retired"]).optional(),
  condition: z.string().optional().openapi({ description: "as `why` says it: running, blocked, ..." }),
  cursor: z.string().optional().openapi({ description: "the `next` of the previous page" }),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const ReasonBody = z.object({ reason: z.string().min(1).max(2000).optional() });
const RetryBody = z.object({
  interval: z
    .string()
    .optional()
    .openapi({ description: "the interval (default: the one the task stands at)" }),
  reason: z.string().min(1).max(2000).optional(),
});
const MarkBody = z.object({
  interval: z
    .string()
    .optional()
    .openapi({ description: "the interval (default: the one the task stands at)" }),
  outcome: z.enum(["success", "skipped"]),
  reason: z.string().trim().min(1).max(2000),
});

const ReportBody = z.object({
  outcome: z.enum(["succeeded", "failed"]),
  reason: z
    .string()
    .trim()
    .min(1)
    .max(2000)
    .optional()
    .openapi({ description: "why it failed (required for a failure), or a note on a success" }),
});
const IntervalParams = taskKeyParam.extend({
  date: z.string().openapi({
    description: "the interval: an instant, or a day (the interval that starts on it in the task's zone)",
    example: "2026-12-01",
  }),
});

/** The writes on one task (each as the CLI command of the same name), by operationId. */
const ACTIONS = {
  pause: "pauseTask",
  resume: "resumeTask",
  retire: "retireTask",
} as const;

/** Tasks: a page of them, one with why it stands where it does, its history and attempts; pause, resume, retire. */
export function taskRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  app.openapi(
    createRoute({
      method: "get",
      path: "/tasks",
      operationId: "listTasks",
      security: needsToken,
      summary: "tasks in key order, a page at a time, with where each stands",
      request: { query: TaskListQuery },
      responses: { 200: json(S.TaskPage, "a page of tasks"), ...S.problemResponses(400, 401, 403) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const q = c.req.valid("query");
      const v = await d.readView(c, q.at);
      const readable = readLimit(caller);
      const page = v.tasks.page(v.now, {
        limit: q.limit,
        ...(readable ? { readable } : {}),
        ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
        ...(q.project !== undefined ? { project: q.project } : {}),
        ...(q.status !== undefined ? { status: q.status } : {}),
        ...(q.condition !== undefined ? { condition: q.condition } : {}),
      });
      return jsonText(c, toJson(page));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/tasks/{key}",
      operationId: "getTask",
      security: needsToken,
      summary: "one task: its declaration, where it stands and why (decideTask's answer)",
      request: { params: taskKeyParam, query: atQuery },
      responses: { 200: json(S.TaskDetail, "the task"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const id = taskIdOf(c.req.valid("param").key);
      requireReadable(caller, [projectOf(id)], "a task");
      const v = await d.readView(c, c.req.valid("query").at);
      const task = requireTask(v.projection, id);
      const row = taskRow(v.projection, task, v.now);
      const instance = v.projection.currentInstance(task) ?? null;
      const reports = await taskReports(v.log, v.projection, id);
      return jsonText(
        c,
        toJsonWithBigints({
          task: shownTask(task),
          priority: shownPriority(task, v.projection.weights),
          condition: row.condition,
          reasons: row.reasons,
          decision: row.decision,
          nextSteps: row.nextSteps,
          instance,
          reports,
          deadline: readableDeadline(caller, taskDeadline(v.projection, task, v.now), id),
        }),
      );
    },
  );
  for (const [action, operationId] of Object.entries(ACTIONS) as Array<[keyof typeof ACTIONS, string]>) {
    app.openapi(
      createRoute({
        method: "post",
        path: `/tasks/{key}/${action}`,
        operationId,
        security: needsToken,
        summary: `${action} a task`,
        request: { params: taskKeyParam, body: optionalBody(ReasonBody) },
        responses: { 200: json(S.Written, "done"), ...S.problemResponses(400, 401, 403, 404, 409, 422) },
      }),
      async (c) => {
        const caller = await d.who(c, "operate");
        const id = taskIdOf(c.req.valid("param").key);
        requireProjects(caller, [projectOf(id)], action);
        const body = await optionalJson(c, ReasonBody);
        const log = d.writer(caller);
        const wp = await state.writeProjection();
        const position =
          action === "pause"
            ? await pauseTask(log, wp, id, body.reason)
            : action === "resume"
              ? await resumeTask(log, wp, id)
              : await retireTask(log, wp, id, body.reason);
        return c.json({ task: id, position: String(position) }, 200);
      },
    );
  }
  const act = async (
    c: Parameters<RouteDeps["who"]>[0],
    id: string,
    interval: string | undefined,
    command: HaltedCommand,
  ) => {
    const caller = await d.who(c, "operate");
    requireProjects(caller, [id.split("/")[0] as string], command.kind === "retry" ? "retry" : "mark");
    const date = interval === undefined ? undefined : instantInput(interval, "interval");
    const r = await actOnInterval(d.writer(caller), await state.writeProjection(), id, date, command, {
      by: caller.actor,
      now: d.now(),
    });
    const { writes: _writes, ...rest } = r;
    return c.json({ ...rest, message: describeHalted(r, command), position: String(r.position) }, 200);
  };
  app.openapi(
    createRoute({
      method: "post",
      path: "/tasks/{key}/retry",
      operationId: "retryInterval",
      security: needsToken,
      summary:
        "run a halted interval again (failed, abandoned, upstream_failed, cancelled): a new attempt, with a fresh retry budget",
      request: { params: taskKeyParam, body: optionalBody(RetryBody) },
      responses: {
        200: json(S.IntervalAction, "retried"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const id = taskIdOf(c.req.valid("param").key);
      const body = await optionalJson(c, RetryBody);
      return act(c, id, body.interval, { kind: "retry", ...(body.reason ? { reason: body.reason } : {}) });
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/tasks/{key}/mark",
      operationId: "markInterval",
      security: needsToken,
      summary:
        "mark an interval succeeded or skipped by hand, with a reason: it counts as done for its children",
      request: {
        params: taskKeyParam,
        body: { content: { "application/json": { schema: MarkBody } }, required: true },
      },
      responses: {
        200: json(S.IntervalAction, "marked"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const id = taskIdOf(c.req.valid("param").key);
      const body = c.req.valid("json");
      return act(c, id, body.interval, { kind: "mark", outcome: body.outcome, reason: body.reason });
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/tasks/{key}/intervals/{date}",
      operationId: "reportInterval",
      security: needsToken,
      summary:
        "report an interval of an outside task (operator: { type: external }) succeeded, or failed with a reason",
      request: {
        params: IntervalParams,
        body: { content: { "application/json": { schema: ReportBody } }, required: true },
      },
      responses: {
        200: json(S.IntervalReport, "recorded, held, or already so (nothing written)"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const params = c.req.valid("param");
      const id = taskIdOf(params.key);
      requireProjects(caller, [projectOf(id)], "report");
      const body = c.req.valid("json");
      const wp = await state.writeProjection();
      const task = wp.tasks.get(id);
      const date = task
        ? intervalOn(dateArg(params.date, "date"), task.spec, "date", id)
        : instantInput(params.date, "date");
      const r = await reportInterval(
        d.writer(caller),
        wp,
        id,
        date,
        { outcome: body.outcome, ...(body.reason ? { reason: body.reason } : {}) },
        { by: caller.actor, now: d.now() },
      );
      const { writes: _writes, ...rest } = r;
      return c.json({ ...rest, message: describeOutsideReport(r), position: String(r.position) }, 200);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/tasks/{key}/history",
      operationId: "getTaskHistory",
      security: needsToken,
      summary: "the task's events and its attempts', in log order, with positions and actors",
      request: { params: taskKeyParam, query: atQuery },
      responses: { 200: json(z.array(S.RecordedEvent), "events"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const id = taskIdOf(c.req.valid("param").key);
      requireReadable(caller, [projectOf(id)], "a task's history");
      const v = await d.readView(c, c.req.valid("query").at);
      const events = await taskHistory(v.log, v.projection, id);
      return jsonText(c, `[${events.map((e) => wireEvent(e).json).join(",")}]`);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/tasks/{key}/attempts",
      operationId: "listTaskAttempts",
      security: needsToken,
      summary: "every attempt of the task: token, worker, state, times, why it ended",
      request: { params: taskKeyParam, query: atQuery },
      responses: { 200: json(z.array(S.Attempt), "attempts"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const id = taskIdOf(c.req.valid("param").key);
      requireReadable(caller, [projectOf(id)], "a task's attempts");
      const v = await d.readView(c, c.req.valid("query").at);
      return jsonText(c, toJsonWithBigints(await taskAttempts(v.log, v.projection, id)));
    },
  );
  return app;
}

/**
 * A deadline's standing as the caller may read it: a root cause in a project its token may not
 * read is named (the task waits for it) without what it said (a failure's message, its output's
 * last line).
 */
function readableDeadline(
  caller: Caller,
  standing: DeadlineStanding | null,
  self: string,
): DeadlineStanding | null {
  const cause = standing?.cause;
  if (!standing || !cause || canRead(caller, projectOf(cause.task))) return standing;
  const told = { ...cause, detail: null };
  return { ...standing, cause: { ...told, text: describeCause(told, self) } };
}
