import { dateArg } from "@chronolog/core";
import { backfill, backfillProgress, cancelBackfill, NotFoundError } from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requireProjects, requireReadable } from "../auth.js";
import { needsToken } from "../openapi.js";
import * as S from "../schemas.js";
import { toJson } from "../state.js";
import type { RouteDeps } from "./deps.js";
import { json, jsonText, requireJson } from "./http.js";
import { projectOf, taskIdOf } from "./params.js";

const BackfillBody = z.object({
  task: z.string(),
  from: z.string(),
  to: z.string(),
  downstream: z.boolean().optional(),
  force: z.boolean().optional(),
  /**
   * The priority its intervals compete for slots with, as a scheduled interval's would
   * (-1000..1000); absent, they wait after every scheduled interval.
   */
  priority: z.number().optional(),
  /** Decide and return the plan, writing nothing. */
  dryRun: z.boolean().optional(),
});

const CancelBody = z.object({
  /** Why, written with the cancel. */
  reason: z.string().min(1).max(2000).optional(),
  /** Decide and return what it would do, writing nothing. */
  dryRun: z.boolean().optional(),
});

/** Backfills: start one (as `chronolog backfill`), and see how far one has come. */
export function backfillRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  // The media type first, so that a refusal names the type that was sent.
  const jsonFirst: MiddlewareHandler = async (c, next) => {
    if (c.req.method === "POST") requireJson(c.req.header("content-type"));
    await next();
  };
  app.use("/backfills", jsonFirst);
  app.use("/backfills/:id/cancel", jsonFirst);
  app.openapi(
    createRoute({
      method: "post",
      path: "/backfills",
      operationId: "backfill",
      security: needsToken,
      summary:
        "re-run a range of a task's intervals (downstream: and its subtree), as `backfill`; its intervals wait after every scheduled one unless priority says otherwise; from and to take a day (2026-12-01: the intervals that start on it in each task's zone) or an instant; dryRun returns the plan and writes nothing",
      request: { body: { required: true, content: { "application/json": { schema: BackfillBody } } } },
      responses: {
        200: json(
          z.unknown(),
          "the plan: every task reset (its range, notes, the pending backfill it joins) or skipped",
        ),
        ...S.problemResponses(400, 401, 403, 404, 409, 415, 422),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const body = c.req.valid("json");
      const id = taskIdOf(body.task);
      requireProjects(caller, [projectOf(id)], "backfill");
      const from = dateArg(body.from, "from").text;
      const to = dateArg(body.to, "to").text;
      const plan = await backfill(
        d.writer(caller),
        await state.writeProjection(),
        id,
        from,
        to,
        !!body.downstream,
        {
          force: !!body.force,
          dryRun: !!body.dryRun,
          ...(body.priority !== undefined ? { priority: body.priority } : {}),
          // The whole plan (a downstream one reaches other projects' tasks), as it was decided.
          permit: (tasks) => requireProjects(caller, tasks.map(projectOf), "backfill"),
        },
      );
      return jsonText(c, toJson(plan));
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/backfills/{id}/cancel",
      operationId: "cancelBackfill",
      security: needsToken,
      summary:
        "cancel a pending backfill, as `backfill --cancel`: each task it walks returns to where it stood before it (one with an interval under way finishes that first), and its runs' intervals that will not run now are closed as cancelled; dryRun returns the same and writes nothing",
      request: {
        params: z.object({ id: z.string() }),
        body: { required: true, content: { "application/json": { schema: CancelBody } } },
      },
      responses: {
        200: json(
          z.unknown(),
          "the cancel: every task with where it returns to, and the runs' intervals closed",
        ),
        ...S.problemResponses(400, 401, 403, 404, 409, 415, 422),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const cancel = await cancelBackfill(d.writer(caller), await state.writeProjection(), id, {
        ...(body.reason ? { reason: body.reason } : {}),
        dryRun: !!body.dryRun,
        // Every task it moves and every run's interval it closes, as decided.
        permit: (tasks) => requireProjects(caller, tasks.map(projectOf), "backfill"),
      });
      return jsonText(c, toJson(cancel));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/backfills/{id}",
      operationId: "getBackfill",
      security: needsToken,
      summary: "a backfill's ranges and how far each has come",
      request: { params: z.object({ id: z.string() }) },
      responses: { 200: json(z.unknown(), "progress"), ...S.problemResponses(401, 403, 404) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const { id } = c.req.valid("param");
      const plan = await state.backfillPlan(id);
      if (!plan) throw new NotFoundError(`no backfill ${id} is in the log`);
      requireReadable(
        caller,
        plan.targets.map((t) => projectOf(t.task)),
        "a backfill",
      );
      return jsonText(c, toJson({ ...plan, progress: backfillProgress(state.projection, plan) }));
    },
  );
  return app;
}
