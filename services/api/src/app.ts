import {
  formatTaskKey,
  instantInput,
  parseDeclarationText,
  parseTaskKey,
  runBlockers,
  runIdInput,
  type SchedulerProjection,
  shownTask,
  ValidationError,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import {
  abandonAttempt,
  activeInstanceOfToken,
  backfill,
  backfillProgress,
  checkDeclaration,
  criticalPath,
  declare,
  describeRun,
  listRuns,
  NotFoundError,
  pauseTask,
  projectionAsOf,
  requireTask,
  rerun,
  resumeTask,
  retireTask,
  taskAttempts,
  taskHistory,
  taskRow,
  trigger,
} from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { authorize, type Caller, isProjectLimited, type Need, requireProjects } from "./auth.js";
import type { ApiMetrics } from "./metrics.js";
import { outputRoute } from "./output.js";
import { HttpProblem, problemResponse } from "./problem.js";
import * as S from "./schemas.js";
import { eventsRoute } from "./sse.js";
import { type ApiState, toJson, toJsonWithBigints, wireEvent } from "./state.js";
import { TaskIndex } from "./task-index.js";
import { defaultWebRoot, uiRoutes, webFile } from "./ui.js";

export interface ApiAppOptions {
  readonly state: ApiState;
  /** The log writes go to (as `api:<token name>`); null: a read-only server. */
  readonly writeLog: EventLog | null;
  /** Where attempts' output files are (`output/` under it). */
  readonly dataDir: string;
  /** Reads need no token (an auditor's own machine). Writes always do. */
  readonly publicRead?: boolean;
  /** Largest request body, in bytes (default 1 MiB). */
  readonly bodyLimitBytes?: number;
  readonly metrics?: ApiMetrics;
  /** Most events an SSE client may fall behind the log before it is dropped (default 50,000). */
  readonly sseMaxLag?: number;
  readonly now?: () => number;
  /** The built web UI served at `/` (default: services/web/dist); null: none. */
  readonly webRoot?: string | null;
}

export const API_PREFIX = "/api/v1";

const json = (schema: z.ZodType, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

const taskKeyParam = z.object({
  key: z.string().openapi({
    description: "the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F)",
    example: "sales%2Facme%2Forders_enriched%2FALL",
  }),
});
const runIdParam = z.object({
  id: z.string().openapi({
    description: "run id `WORKFLOW@LOGICAL_DATE`, URL-encoded",
    example: "etl@2026-11-30T02:00Z",
  }),
});
const atQuery = z.object({
  at: z.string().optional().openapi({ description: "the state as of this log position" }),
});
const reasonBody = {
  required: false,
  content: { "application/json": { schema: z.object({ reason: z.string().min(1).max(2000).optional() }) } },
};

function taskIdOf(text: string): string {
  const parsed = parseTaskKey(text);
  if (!parsed.ok) throw new ValidationError("key", [{ path: "", message: parsed.error }]);
  return formatTaskKey(parsed.key);
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

/** The media types a declaration body may have, and the format each means. */
function declarationFormat(contentType: string | undefined): "yaml" | "json" {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "application/json") return "json";
  if (["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"].includes(type)) return "yaml";
  throw new HttpProblem(
    415,
    "unsupported_media_type",
    `a declaration is application/json or application/yaml, not ${type || "a body without a content type"}`,
  );
}

/**
 * The HTTP API as a Hono app: every route calls the functions the CLI calls, on the API's own
 * projection, and writes as `api:<token name>`.
 */
export function createApiApp(o: ApiAppOptions): OpenAPIHono {
  const { state } = o;
  const now = o.now ?? Date.now;
  const app = new OpenAPIHono({
    defaultHook: (result, c) => {
      if (!result.success)
        return problemResponse(
          c,
          new ValidationError(
            "request",
            result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
          ),
        );
    },
  });
  const tasks = new TaskIndex(state.projection);
  /**
   * What a read answers from: the live projection, or with `?at=POSITION` the state as of that
   * position (folded from the ladder of snapshots, and a log that shows nothing after it), with
   * the time its reasons are given at. The last few positions asked for are kept.
   */
  interface ReadView {
    readonly projection: SchedulerProjection;
    readonly log: EventLog;
    readonly now: number;
    readonly tasks: TaskIndex;
  }
  const recentViews = new Map<bigint, Promise<ReadView & { hash: string; recordedAt: string }>>();
  const readView = async (c: Context, at: string | undefined): Promise<ReadView> => {
    if (at === undefined) return { projection: state.projection, log: state.log, now: now(), tasks };
    if (!/^\d+$/.test(at))
      throw new ValidationError("at", [{ path: "", message: `"${at}" is not a log position (0 or more)` }]);
    const position = BigInt(at);
    const head = await state.log.headPosition();
    if (position > head)
      throw new ValidationError("at", [
        { path: "", message: `position ${position} is past the log's head (${head})` },
      ]);
    let view = recentViews.get(position);
    if (!view) {
      view = projectionAsOf(state.log, o.dataDir, position).then((a) => ({
        projection: a.projection,
        log: a.log,
        now: a.event ? Date.parse(a.event.recordedAt) : now(),
        tasks: new TaskIndex(a.projection),
        hash: a.event?.hash ?? "",
        recordedAt: a.event?.recordedAt ?? "",
      }));
      recentViews.set(position, view);
      view.catch(() => recentViews.delete(position));
      if (recentViews.size > 8) recentViews.delete(recentViews.keys().next().value as bigint);
    }
    const v = await view;
    c.header("chronolog-as-of", `${position} ${v.hash} ${v.recordedAt}`);
    return v;
  };
  app.onError((error, c) => problemResponse(c, error));
  if (o.metrics) {
    const metrics = o.metrics;
    app.use("*", async (c, next) => {
      await next();
      // The route's pattern, never its values: the label's values stay few.
      metrics.request(c.req.method, c.req.routePath, c.res.status);
    });
  }
  const webRoot = o.webRoot === undefined ? defaultWebRoot() : o.webRoot;
  app.notFound((c) => {
    // A GET outside the API is the web UI's: a file of it, or its index.html (it routes itself).
    const path = c.req.path;
    if (webRoot && (c.req.method === "GET" || c.req.method === "HEAD") && !/^\/(api|ui)(\/|$)/.test(path)) {
      const file = webFile(webRoot, path);
      if (file) return file;
    }
    return problemResponse(c, new HttpProblem(404, "not_found", `no route ${c.req.method} ${c.req.path}`));
  });

  const who = async (c: Context, need: Need): Promise<Caller> =>
    authorize(c, await state.currentTokens(), need, !!o.publicRead);
  /** The log a write goes to, as the caller; refused on a read-only server. */
  const writer = (caller: Caller): EventLog => {
    if (!o.writeLog)
      throw new HttpProblem(
        403,
        "read_only",
        "this server is read-only: start it with --writable to allow writes",
      );
    return o.writeLog.as(caller.actor);
  };
  const limit = o.bodyLimitBytes ?? 1024 * 1024;
  const limitBody = bodyLimit({
    maxSize: limit,
    onError: (c) =>
      problemResponse(
        c,
        new HttpProblem(413, "body_too_large", `the body is larger than this server takes (${limit} bytes)`, {
          limitBytes: limit,
        }),
      ),
  });
  // Only where a body is taken: the limiter asks for the request's body, which makes the server
  // build a whole Fetch Request for every request, reads included (a tenth of a read's time).
  app.use(`${API_PREFIX}/*`, (c, next) =>
    c.req.method === "GET" || c.req.method === "HEAD" ? next() : limitBody(c, next),
  );

  // ---- health --------------------------------------------------------------------------------
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/healthz`,
      summary: "the server answers",
      responses: { 200: json(z.object({ ok: z.literal(true) }), "alive") },
    }),
    (c) => c.json({ ok: true as const }, 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/readyz`,
      summary: "ready once the projection holds what the log held when the server started",
      responses: {
        200: json(z.object({ ready: z.boolean(), position: z.string() }), "ready"),
        503: json(z.object({ ready: z.boolean(), position: z.string() }), "still catching up"),
      },
    }),
    (c) =>
      c.json({ ready: state.ready, position: String(state.projection.position) }, state.ready ? 200 : 503),
  );

  // A body's media type is checked before the body is validated, so a refusal names the type
  // that was sent (the validator's own 415 says only "Unsupported Media Type").
  app.use(`${API_PREFIX}/declarations`, async (c, next) => {
    if (c.req.method === "POST") declarationFormat(c.req.header("content-type"));
    await next();
  });
  app.use(`${API_PREFIX}/backfills`, async (c, next) => {
    if (c.req.method === "POST") requireJson(c.req.header("content-type"));
    await next();
  });

  // ---- declarations ------------------------------------------------------------------------
  app.openapi(
    createRoute({
      method: "post",
      path: `${API_PREFIX}/declarations`,
      summary: "declare tasks, workflows and connections, whole or not at all (dryRun: check only)",
      request: {
        query: z.object({
          dryRun: z.enum(["true", "false"]).optional(),
          revive: z.enum(["true", "false"]).optional(),
        }),
        body: {
          required: true,
          content: {
            "application/json": { schema: S.DeclarationDocument },
            "application/yaml": { schema: z.string().openapi({ description: "the same document, as YAML" }) },
          },
        },
      },
      responses: {
        200: json(S.DeclareOutcome, "what changed (or would, with dryRun)"),
        ...S.problemResponses(400, 401, 403, 409, 413, 415, 422),
      },
    }),
    async (c) => {
      const { dryRun, revive } = c.req.valid("query");
      const check = dryRun === "true";
      const caller = await who(c, "declare");
      const format = declarationFormat(c.req.header("content-type"));
      const text = await c.req.text();
      const source = parseDeclarationText(text, { filename: "<request>", format });
      const options = revive === "true" ? { revive: true } : {};
      // What the document names, and where: a token limited to projects declares only in them.
      const planned = checkDeclaration(state.projection, [source], now(), options);
      if (isProjectLimited(caller)) {
        requireProjects(
          caller,
          planned.tasks.map((t) => t.task.split("/")[0] as string),
          "declare tasks",
        );
        const workflows = planned.workflows.map((w) => state.projection.workflows.get(w.name)?.project);
        const doc = source.document as { workflows?: Array<{ project?: unknown }> };
        const named = (doc.workflows ?? []).map((w) => String(w.project));
        requireProjects(
          caller,
          [...named, ...workflows.filter((p): p is string => !!p)],
          "declare workflows",
        );
        const changed = planned.connections.filter((x) => x.outcome !== "unchanged");
        if (changed.length > 0)
          throw new HttpProblem(
            403,
            "forbidden",
            `connections are shared by every project: declaring ${changed.map((x) => x.name).join(", ")} needs a token not limited to projects`,
          );
      }
      const outcome = check
        ? planned
        : await declare(writer(caller), await state.writeProjection(), [source], now(), options);
      return jsonText(c, toJson({ dryRun: check, ...outcome }));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/connections`,
      summary: "every declared connection",
      responses: { 200: json(z.array(S.ConnectionSpec), "connections"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await who(c, "read");
      return jsonText(c, toJson([...state.projection.connections.values()]));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/workflows`,
      summary: "every declared workflow",
      responses: { 200: json(z.array(S.WorkflowSpec), "workflows"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await who(c, "read");
      return jsonText(c, toJson([...state.projection.workflows.values()]));
    },
  );

  // ---- tasks --------------------------------------------------------------------------------
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/tasks`,
      summary: "tasks in key order, a page at a time, with where each stands",
      request: {
        query: z.object({
          project: z.string().optional(),
          status: z.enum(["active", "paused", "retired"]).optional(),
          condition: z
            .string()
            .optional()
            .openapi({ description: "as `why` says it: running, blocked, ..." }),
          cursor: z.string().optional().openapi({ description: "the `next` of the previous page" }),
          limit: z.coerce.number().int().min(1).max(1000).default(100),
          at: z.string().optional().openapi({ description: "the state as of this log position" }),
        }),
      },
      responses: { 200: json(S.TaskPage, "a page of tasks"), ...S.problemResponses(400, 401, 403) },
    }),
    async (c) => {
      await who(c, "read");
      const q = c.req.valid("query");
      const v = await readView(c, q.at);
      const page = v.tasks.page(v.now, {
        limit: q.limit,
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
      path: `${API_PREFIX}/tasks/{key}`,
      summary: "one task: its declaration, where it stands and why (decideTask's answer)",
      request: { params: taskKeyParam, query: atQuery },
      responses: { 200: json(S.TaskDetail, "the task"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const id = taskIdOf(c.req.valid("param").key);
      const v = await readView(c, c.req.valid("query").at);
      const task = requireTask(v.projection, id);
      const row = taskRow(v.projection, task, v.now);
      const instance = v.projection.currentInstance(task) ?? null;
      return jsonText(
        c,
        toJsonWithBigints({
          task: shownTask(task),
          condition: row.condition,
          reasons: row.reasons,
          decision: row.decision,
          instance,
        }),
      );
    },
  );
  for (const action of ["pause", "resume", "retire"] as const) {
    app.openapi(
      createRoute({
        method: "post",
        path: `${API_PREFIX}/tasks/{key}/${action}`,
        summary: `${action} a task`,
        request: { params: taskKeyParam, body: reasonBody },
        responses: { 200: json(S.Written, "done"), ...S.problemResponses(400, 401, 403, 404, 409, 422) },
      }),
      async (c) => {
        const caller = await who(c, "operate");
        const id = taskIdOf(c.req.valid("param").key);
        requireProjects(caller, [id.split("/")[0] as string], action);
        const body = await optionalJson(c, z.object({ reason: z.string().min(1).max(2000).optional() }));
        const log = writer(caller);
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
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/tasks/{key}/history`,
      summary: "the task's events and its attempts', in log order, with positions and actors",
      request: { params: taskKeyParam, query: atQuery },
      responses: { 200: json(z.array(S.RecordedEvent), "events"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const id = taskIdOf(c.req.valid("param").key);
      const v = await readView(c, c.req.valid("query").at);
      const events = await taskHistory(v.log, v.projection, id);
      return jsonText(c, `[${events.map((e) => wireEvent(e).json).join(",")}]`);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/tasks/{key}/attempts`,
      summary: "every attempt of the task: token, worker, state, times, why it ended",
      request: { params: taskKeyParam, query: atQuery },
      responses: { 200: json(z.array(S.Attempt), "attempts"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const id = taskIdOf(c.req.valid("param").key);
      const v = await readView(c, c.req.valid("query").at);
      return jsonText(c, toJsonWithBigints(await taskAttempts(v.log, v.projection, id)));
    },
  );
  outputRoute(app, { state, dataDir: o.dataDir, who });
  app.openapi(
    createRoute({
      method: "post",
      path: `${API_PREFIX}/attempts/{token}/abandon`,
      summary: "abandon an attempt in flight (its worker will not report); retry: a new attempt follows",
      request: {
        params: z.object({ token: z.string() }),
        body: {
          required: false,
          content: {
            "application/json": {
              schema: z.object({
                retry: z.boolean().optional(),
                reason: z.string().min(1).max(2000).optional(),
              }),
            },
          },
        },
      },
      responses: { 200: json(S.Written, "abandoned"), ...S.problemResponses(400, 401, 403, 404, 409, 422) },
    }),
    async (c) => {
      const caller = await who(c, "operate");
      const { token } = c.req.valid("param");
      const body = await optionalJson(
        c,
        z.object({ retry: z.boolean().optional(), reason: z.string().min(1).max(2000).optional() }),
      );
      const inst = activeInstanceOfToken(state.projection, token);
      if (!inst) throw new NotFoundError(`no attempt in flight has token ${token}`);
      const id = formatTaskKey(inst.key);
      requireProjects(caller, [inst.key.project], "abandon attempts");
      const r = await abandonAttempt(writer(caller), await state.writeProjection(), id, {
        interval: inst.logicalDate,
        token,
        retry: !!body.retry,
        reason: body.reason ?? "abandoned by an operator",
        by: caller.actor,
      });
      return c.json({ task: id, ...r, position: String(r.position) }, 200);
    },
  );

  // ---- runs and backfills -------------------------------------------------------------------
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/runs`,
      summary: "workflow runs, newest logical date first, with what keeps each from finishing",
      request: {
        query: z.object({
          workflow: z.string().optional(),
          at: z.string().optional().openapi({ description: "the state as of this log position" }),
        }),
      },
      responses: { 200: json(z.array(S.Run), "runs"), ...S.problemResponses(401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const { workflow, at } = c.req.valid("query");
      const v = await readView(c, at);
      if (workflow !== undefined && !v.projection.workflows.has(workflow))
        throw new NotFoundError(`no workflow ${workflow} is declared`);
      const runs = listRuns(v.projection, workflow).map((r) => ({
        ...r,
        blockedBy: runBlockers(v.projection.tasks, r),
      }));
      return jsonText(c, toJson(runs));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/runs/{id}`,
      summary: "one run with its tries and instances; wait=30s holds the request until it finishes",
      request: {
        params: runIdParam,
        query: z.object({
          wait: z.string().optional(),
          try: z.coerce.number().int().min(1).optional(),
          at: z.string().optional().openapi({ description: "the state as of this log position" }),
        }),
      },
      responses: { 200: json(z.unknown(), "the run"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const runId = runIdInput(c.req.valid("param").id, "id");
      const q = c.req.valid("query");
      if (q.at !== undefined && q.wait !== undefined)
        throw new ValidationError("wait", [
          { path: "", message: "a run as of a position does not change: wait or at, not both" },
        ]);
      const deadline = now() + waitMs(q.wait);
      for (; q.at === undefined; ) {
        const run = state.projection.runs.get(runId);
        if (!run && !q.wait) break;
        if (run && run.status !== "running") break;
        if (now() >= deadline) break;
        await state.changed(Math.min(1000, deadline - now()));
      }
      const v = await readView(c, q.at);
      const view = await describeRun(v.log, v.projection, runId, q.try);
      return jsonText(c, toJson({ ...view, blockedBy: runBlockers(v.projection.tasks, view.run) }));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/runs/{id}/critical-path`,
      summary: "the chain of last-parent-to-finish links of a try, with durations",
      request: {
        params: runIdParam,
        query: z.object({
          try: z.coerce.number().int().min(1).optional(),
          at: z.string().optional().openapi({ description: "the state as of this log position" }),
        }),
      },
      responses: { 200: json(z.unknown(), "the critical path"), ...S.problemResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const runId = runIdInput(c.req.valid("param").id, "id");
      const q = c.req.valid("query");
      const v = await readView(c, q.at);
      const view = await describeRun(v.log, v.projection, runId, q.try);
      const parentsOf = (t: string) => (v.projection.tasks.get(t)?.parents ?? []).map(formatTaskKey);
      return jsonText(c, toJson(criticalPath(view, parentsOf)));
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: `${API_PREFIX}/workflows/{name}/runs`,
      summary: "trigger a run of a workflow outside its schedule, with params",
      request: {
        params: z.object({ name: z.string() }),
        body: {
          required: false,
          content: {
            "application/json": {
              schema: z.object({
                logicalDate: z.string().optional(),
                params: z.record(z.string(), z.string()).optional(),
              }),
            },
          },
        },
      },
      responses: {
        200: json(z.unknown(), "the run started"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const caller = await who(c, "operate");
      const { name } = c.req.valid("param");
      const body = await optionalJson(
        c,
        z.object({ logicalDate: z.string().optional(), params: z.record(z.string(), z.string()).optional() }),
      );
      const wf = state.projection.workflows.get(name);
      if (!wf) throw new NotFoundError(`no workflow ${name} is declared`);
      requireProjects(caller, [wf.project], "trigger workflows");
      const logicalDate =
        body.logicalDate === undefined ? undefined : instantInput(body.logicalDate, "logicalDate");
      const r = await trigger(
        writer(caller),
        await state.writeProjection(),
        name,
        logicalDate,
        body.params ?? {},
        now(),
      );
      return jsonText(c, toJson(r));
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: `${API_PREFIX}/runs/{id}/rerun`,
      summary: "re-execute a finished run: all of it, or (failedOnly) what did not succeed and below",
      request: {
        params: runIdParam,
        body: {
          required: false,
          content: { "application/json": { schema: z.object({ failedOnly: z.boolean().optional() }) } },
        },
      },
      responses: {
        200: json(z.unknown(), "the tasks rerun"),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const caller = await who(c, "operate");
      const runId = runIdInput(c.req.valid("param").id, "id");
      const body = await optionalJson(c, z.object({ failedOnly: z.boolean().optional() }));
      const run = state.projection.runs.get(runId);
      if (run)
        requireProjects(caller, [state.projection.workflows.get(run.workflow)?.project ?? ""], "rerun runs");
      const r = await rerun(writer(caller), await state.writeProjection(), runId, !!body.failedOnly);
      return jsonText(c, toJson({ runId, ...r }));
    },
  );
  const BackfillBody = z.object({
    task: z.string(),
    from: z.string(),
    to: z.string(),
    downstream: z.boolean().optional(),
    force: z.boolean().optional(),
  });
  app.openapi(
    createRoute({
      method: "post",
      path: `${API_PREFIX}/backfills`,
      summary: "re-run a range of a task's intervals (downstream: and its subtree), as `backfill`",
      request: { body: { required: true, content: { "application/json": { schema: BackfillBody } } } },
      responses: {
        200: json(z.unknown(), "the plan"),
        ...S.problemResponses(400, 401, 403, 404, 409, 415, 422),
      },
    }),
    async (c) => {
      const caller = await who(c, "operate");
      const body = c.req.valid("json");
      const id = taskIdOf(body.task);
      requireProjects(caller, [id.split("/")[0] as string], "backfill");
      const from = instantInput(body.from, "from");
      const to = instantInput(body.to, "to");
      const plan = await backfill(
        writer(caller),
        await state.writeProjection(),
        id,
        from,
        to,
        !!body.downstream,
        {
          force: !!body.force,
        },
      );
      return jsonText(c, toJson(plan));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/backfills/{id}`,
      summary: "a backfill's ranges and how far each has come",
      request: { params: z.object({ id: z.string() }) },
      responses: { 200: json(z.unknown(), "progress"), ...S.problemResponses(401, 403, 404) },
    }),
    async (c) => {
      await who(c, "read");
      const { id } = c.req.valid("param");
      const plan = await state.backfillPlan(id);
      if (!plan) throw new NotFoundError(`no backfill ${id} is in the log`);
      return jsonText(c, toJson({ ...plan, progress: backfillProgress(state.projection, plan) }));
    },
  );

  // ---- the log ------------------------------------------------------------------------------
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/log`,
      summary: "events from a position, a page at a time",
      request: {
        query: z.object({
          from: z.string().regex(/^\d+$/).default("0"),
          limit: z.coerce.number().int().min(1).max(10_000).default(100),
        }),
      },
      responses: {
        200: json(z.object({ events: z.array(S.RecordedEvent), next: z.string().nullable() }), "a page"),
        ...S.problemResponses(400, 401, 403),
      },
    }),
    async (c) => {
      await who(c, "read");
      const q = c.req.valid("query");
      const events = await state.log.readAll({ fromPosition: BigInt(q.from), maxCount: q.limit });
      const last = events.at(-1);
      const next = last && events.length === q.limit ? String(last.position + 1n) : null;
      return jsonText(
        c,
        `{"events":[${events.map((e) => wireEvent(e).json).join(",")}],"next":${JSON.stringify(next)}}`,
      );
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${API_PREFIX}/log/head`,
      summary: "the log's head: the last event's position and hash",
      responses: { 200: json(S.Head, "the head"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await who(c, "read");
      return c.json(await headOf(state.log), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: `${API_PREFIX}/log/verify`,
      summary: "walk the log and check its hash chain (writes nothing)",
      responses: { 200: json(S.Verify, "the result"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await who(c, "read");
      const result = await state.log.verify();
      const head = await headOf(state.log);
      return c.json(
        {
          ok: result.break === null,
          checked: result.checked,
          headPosition: String(result.headPosition),
          headHash: head.position === String(result.headPosition) ? head.hash : "",
          break: result.break
            ? { position: String(result.break.position), reason: result.break.reason }
            : null,
        },
        200,
      );
    },
  );
  eventsRoute(app, {
    state,
    who,
    maxLag: o.sseMaxLag ?? 50_000,
    ...(o.metrics ? { metrics: o.metrics } : {}),
  });

  uiRoutes(app, { state, who, readView });

  app.doc31(`${API_PREFIX}/openapi.json`, {
    openapi: "3.1.0",
    info: {
      title: "Chronolog",
      version: "1",
      description: "An event-sourced task scheduler: declarations, tasks, runs, the log, live events.",
    },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  return app;
}

/** A JSON body already serialised (bigints as strings), for a route that declares its schema. */
const jsonText = (c: Context, text: string) =>
  c.body(text, 200, { "content-type": "application/json" }) as never;

async function headOf(log: EventLog): Promise<{ position: string; hash: string }> {
  const head = await log.headPosition();
  if (head < 0n) return { position: "-1", hash: "" };
  const [last] = await log.readAll({ fromPosition: head, maxCount: 1 });
  return { position: String(head), hash: last?.metadata.hash ?? "" };
}

/** Refuses a body that is not application/json (415), naming the type it has. */
function requireJson(contentType: string | undefined): void {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json")
    throw new HttpProblem(
      415,
      "unsupported_media_type",
      `this body is application/json, not ${type || "untyped"}`,
    );
}

/** A JSON body that may be absent (an empty object then), checked against `schema`. */
async function optionalJson<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const text = await c.req.text();
  if (text.trim() === "") return schema.parse({});
  requireJson(c.req.header("content-type"));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError("body", [{ path: "", message: `not valid JSON: ${(error as Error).message}` }]);
  }
  const r = schema.safeParse(value);
  if (!r.success)
    throw new ValidationError(
      "body",
      r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    );
  return r.data;
}
