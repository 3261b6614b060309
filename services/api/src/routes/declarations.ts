import { parseDeclarationText } from "@chronolog/core";
import { checkDeclaration, declare, retireWorkflow } from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type Caller, canRead, isProjectLimited, readLimit, requireProjects } from "../auth.js";
import { needsToken } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import * as S from "../schemas.js";
import { toJson } from "../state.js";
import type { RouteDeps } from "./deps.js";
import { json, jsonText, optionalBody, optionalJson } from "./http.js";

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
 * Refuses, for a token limited to projects, a declaration that reaches outside them: tasks and
 * workflows in other projects, and any change to a connection (every project shares them).
 */
function requireDeclarable(
  caller: Caller,
  planned: ReturnType<typeof checkDeclaration>,
  document: unknown,
  projectOfWorkflow: (name: string) => string | undefined,
): void {
  requireProjects(
    caller,
    planned.tasks.map((t) => t.task.split("/")[0] as string),
    "declare tasks",
  );
  const workflows = planned.workflows.map((w) => projectOfWorkflow(w.name));
  const doc = document as { workflows?: Array<{ project?: unknown }> };
  const named = (doc.workflows ?? []).map((w) => String(w.project));
  requireProjects(caller, [...named, ...workflows.filter((p): p is string => !!p)], "declare workflows");
  const changed = planned.connections.filter((x) => x.outcome !== "unchanged");
  if (changed.length > 0)
    throw new HttpProblem(
      403,
      "forbidden",
      `connections are shared by every project: declaring ${changed.map((x) => x.name).join(", ")} needs a token not limited to projects`,
    );
}

const WorkflowNameParam = z.object({
  name: z.string().min(1).openapi({ description: "the workflow's name", example: "orders_daily" }),
});
const ReasonBody = z.object({ reason: z.string().min(1).max(2000).optional() });

const DeclareQuery = z.object({
  dryRun: z.enum(["true", "false"]).optional(),
  revive: z.enum(["true", "false"]).optional(),
});

/** Declaring (`POST /declarations`), and what was declared: connections and workflows. */
export function declarationRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  // A body's media type is checked before the body is validated, so a refusal names the type
  // that was sent (the validator's own 415 says only "Unsupported Media Type").
  app.use("/declarations", async (c, next) => {
    if (c.req.method === "POST") declarationFormat(c.req.header("content-type"));
    await next();
  });
  app.openapi(
    createRoute({
      method: "post",
      path: "/declarations",
      operationId: "declare",
      security: needsToken,
      summary: "declare tasks, workflows and connections, whole or not at all (dryRun: check only)",
      request: {
        query: DeclareQuery,
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
      const caller = await d.who(c, "declare");
      const format = declarationFormat(c.req.header("content-type"));
      const text = await c.req.text();
      const source = parseDeclarationText(text, { filename: "<request>", format });
      // A token that reads only some projects is told of nothing declared in the others.
      const options = {
        ...(revive === "true" ? { revive: true } : {}),
        ...(readLimit(caller) !== null ? { visible: (project: string) => canRead(caller, project) } : {}),
      };
      // What the document names, and where: a token limited to projects declares only in them.
      const planned = checkDeclaration(state.projection, [source], d.now(), options);
      if (isProjectLimited(caller))
        requireDeclarable(
          caller,
          planned,
          source.document,
          (w) => state.projection.workflows.get(w)?.project,
        );
      const outcome = check
        ? planned
        : await declare(d.writer(caller), await state.writeProjection(), [source], d.now(), options);
      return jsonText(c, toJson({ dryRun: check, ...outcome }));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/connections",
      operationId: "listConnections",
      security: needsToken,
      summary: "every declared connection",
      responses: { 200: json(z.array(S.ConnectionSpec), "connections"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await d.who(c, "read");
      return jsonText(c, toJson([...state.projection.connections.values()]));
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/workflows",
      operationId: "listWorkflows",
      security: needsToken,
      summary: "every declared workflow",
      responses: { 200: json(z.array(S.WorkflowSpec), "workflows"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const shown = [...state.projection.workflows.values()].filter((w) => canRead(caller, w.project));
      return jsonText(c, toJson(shown));
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/workflows/{name}/retire",
      operationId: "retireWorkflow",
      security: needsToken,
      summary:
        "retire a workflow and every task of it in one atomic write (as `chronolog retire --workflow`)",
      request: { params: WorkflowNameParam, body: optionalBody(ReasonBody) },
      responses: {
        200: json(
          S.Written.extend({ workflow: z.string(), tasks: z.array(z.string()) }),
          "the workflow and the tasks retired with it",
        ),
        ...S.problemResponses(400, 401, 403, 404, 409, 422),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const { name } = c.req.valid("param");
      const project = state.projection.workflows.get(name)?.project;
      if (project !== undefined) requireProjects(caller, [project], "retire workflows");
      const body = await optionalJson(c, ReasonBody);
      const r = await retireWorkflow(d.writer(caller), await state.writeProjection(), name, body.reason);
      return c.json({ workflow: r.workflow, tasks: [...r.tasks], position: String(r.position) }, 200);
    },
  );
  return app;
}
