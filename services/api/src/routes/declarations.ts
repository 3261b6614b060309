import { type ParsedDeclaration, parseDeclarationText, ValidationError } from "@chronolog/core";
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
/** Refuses a document naming a project outside the caller's, from its text alone. */
function requireNamedProjects(caller: Caller, document: unknown): void {
  const doc = (typeof document === "object" && document !== null ? document : {}) as {
    tasks?: unknown;
    workflows?: unknown;
  };
  const projects: string[] = [];
  const projectOf = (item: unknown, fallback?: string) => {
    const p = typeof item === "object" && item !== null ? (item as { project?: unknown }).project : undefined;
    return typeof p === "string" ? p : fallback;
  };
  for (const t of Array.isArray(doc.tasks) ? doc.tasks : []) {
    const p = projectOf(t);
    if (p !== undefined) projects.push(p);
  }
  for (const w of Array.isArray(doc.workflows) ? doc.workflows : []) {
    const wp = projectOf(w);
    if (wp !== undefined) projects.push(wp);
    const tasks = (w as { tasks?: unknown }).tasks;
    for (const t of Array.isArray(tasks) ? tasks : []) {
      const p = projectOf(t, wp);
      if (p !== undefined) projects.push(p);
    }
  }
  requireProjects(caller, projects, "declare tasks");
}

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

/** Each request's declaration, parsed once (by the first of the middleware, hook or handler to ask). */
const parsed = new WeakMap<Request, Promise<ParsedDeclaration>>();

function sourceOf(
  request: Request,
  text: () => Promise<string>,
  format: "yaml" | "json",
): Promise<ParsedDeclaration> {
  let source = parsed.get(request);
  if (!source) {
    source = text().then((t) => parseDeclarationText(t, { filename: "<request>", format }));
    parsed.set(request, source);
  }
  return source;
}

/** Declaring (`POST /declarations`), and what was declared: connections and workflows. */
export function declarationRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  // A body's media type is checked before the body is validated, so a refusal names the type
  // that was sent (the validator's own 415 says only "Unsupported Media Type").
  // A JSON body is read as a declaration file is (before the route's schema sees it): a syntax
  // error names its line and column, and a value JSON cannot hold is refused, as in YAML.
  app.use("/declarations", async (c, next) => {
    if (c.req.method === "POST" && declarationFormat(c.req.header("content-type")) === "json")
      await sourceOf(c.req.raw, () => c.req.text(), "json");
    await next();
  });
  /** Options of a declaration by `caller`: told of nothing declared in projects it may not read. */
  const optionsFor = (caller: Caller, revive: boolean) => ({
    ...(revive ? { revive: true } : {}),
    ...(readLimit(caller) !== null ? { visible: (project: string) => canRead(caller, project) } : {}),
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
      const source = await sourceOf(c.req.raw, () => c.req.text(), format);
      // A token that reads only some projects is told of nothing declared in the others.
      const options = optionsFor(caller, revive === "true");
      // A token limited to projects declares only in them: the projects the document names are
      // checked first (a refusal of its contents would say what the others hold), then what the
      // document reaches (the workflows its tasks are in).
      if (isProjectLimited(caller)) requireNamedProjects(caller, source.document);
      // (A dry run is answered with it, and so makes the log's checks too; a declaration makes
      // them as it is written.)
      const planned = checkDeclaration(state.projection, [source], d.now(), {
        ...options,
        checkEvents: check,
      });
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
    // A JSON document the route's schema refuses is refused as its YAML twin would be: every
    // problem in one round, in the validator's words (the schema's are the fallback).
    (result, c) => {
      if (result.success) return;
      const refuse = async (): Promise<never> => {
        const source = await sourceOf(c.req.raw, () => c.req.text(), "json");
        const caller = await d.who(c, "declare");
        if (isProjectLimited(caller)) requireNamedProjects(caller, source.document);
        checkDeclaration(state.projection, [source], d.now(), optionsFor(caller, false));
        throw new ValidationError(
          "request",
          result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
        );
      };
      return refuse();
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
