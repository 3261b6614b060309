import type { SchedulerProjection } from "@chronolog/core";
import type { Context } from "hono";
import { HttpProblem } from "./problem.js";
import type { AccessScope, AccessToken, TokenBook } from "./tokens/index.js";

/** What a route needs: a read, a declaration, an operator's action, an administrator, or a worker's. */
export type Need = "read" | "declare" | "operate" | "admin" | "work";

const GRANTS: Readonly<Record<AccessScope, ReadonlySet<Need>>> = {
  read: new Set(["read"]),
  declare: new Set(["read", "declare"]),
  operate: new Set(["read", "operate"]),
  admin: new Set(["read", "declare", "operate", "admin", "work"]),
  // A worker's token: the worker routes only (and only for its queues: see the routes).
  work: new Set(["work"]),
};

/** Who is calling: the token, or nobody (reads on a server that allows them without one). */
export interface Caller {
  readonly token: AccessToken | null;
  /** The actor its writes carry: `api:<token name>`. */
  readonly actor: string;
}

/** The one route that takes its token as `?access_token=`: a browser's EventSource sends no headers. */
const QUERY_TOKEN_PATH = "/api/v1/events";

/** The bearer token of a request, or null. */
function bearerOf(c: Context): string | null {
  const header = c.req.header("authorization");
  if (!header) {
    if (c.req.method === "GET" && c.req.path === QUERY_TOKEN_PATH) return c.req.query("access_token") ?? null;
    return null;
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new HttpProblem(401, "unauthenticated", "the Authorization header is not `Bearer <token>`");
  return m[1] as string;
}

/**
 * Checks the request's token for what the route needs. No token: 401 (unless the server lets
 * anyone read and this is a read); an unknown or revoked token: 401; a scope that does not
 * grant it: 403.
 */
export function authorize(c: Context, tokens: TokenBook, need: Need, publicRead: boolean): Caller {
  const presented = bearerOf(c);
  if (presented === null) {
    if (need === "read" && publicRead) return { token: null, actor: "api:anonymous" };
    throw new HttpProblem(401, "unauthenticated", "this needs a token: send `Authorization: Bearer <token>`");
  }
  const checked = tokens.check(presented);
  if (!checked.ok)
    throw new HttpProblem(
      401,
      "unauthenticated",
      checked.why === "revoked" ? "this token was revoked" : "this token is not one the log has issued",
    );
  const t = checked.token;
  if (!GRANTS[t.scope].has(need))
    throw new HttpProblem(
      403,
      "forbidden",
      `token ${t.name} has scope ${t.scope}, which does not allow ${need}`,
      {
        scope: t.scope,
        needs: need,
      },
    );
  return { token: t, actor: `api:${t.name}` };
}

/** Refuses a write to a project the caller's token is not limited to (403), naming every one outside. */
export function requireProjects(caller: Caller, projects: Iterable<string>, what: string): void {
  const limit = caller.token?.projects ?? [];
  if (limit.length === 0) return;
  const outside = [...new Set(projects)].filter((p) => !limit.includes(p)).sort();
  if (outside.length > 0)
    throw new HttpProblem(
      403,
      "forbidden",
      `token ${caller.token?.name} is limited to ${limit.join(", ")}: it cannot ${what} in project${outside.length > 1 ? "s" : ""} ${outside.join(", ")}`,
      { project: outside[0], outside, projects: limit },
    );
}

/** Whether the caller's token is limited to some projects. */
export const isProjectLimited = (caller: Caller) => (caller.token?.projects.length ?? 0) > 0;

/** The projects the caller may read, or null: every one. */
export function readLimit(caller: Caller): ReadonlySet<string> | null {
  const limit = caller.token?.readProjects ?? [];
  return limit.length > 0 ? new Set(limit) : null;
}

/** Whether the caller may read what is in `project`. */
export function canRead(caller: Caller, project: string): boolean {
  const limit = readLimit(caller);
  return limit === null || limit.has(project);
}

/** Refuses (403) a read of something in a project the caller's token may not read. */
export function requireReadable(caller: Caller, projects: Iterable<string>, what: string): void {
  const limit = readLimit(caller);
  if (limit === null) return;
  const outside = [...new Set(projects)].filter((p) => !limit.has(p)).sort();
  if (outside.length > 0)
    throw new HttpProblem(
      403,
      "forbidden",
      `token ${caller.token?.name} may read only ${[...limit].join(", ")}: not ${what} in project${outside.length > 1 ? "s" : ""} ${outside.join(", ")}`,
      { project: outside[0], outside, readProjects: [...limit] },
    );
}

/**
 * The project an event's stream belongs to: a task's and an attempt's by their key, a run's and
 * a workflow's by the workflow's project; null for what every project shares (connections,
 * tokens, alerts, notes).
 */
export function projectOfStream(streamId: string, projection: SchedulerProjection): string | null {
  const dash = streamId.indexOf("-");
  const category = streamId.slice(0, dash);
  const rest = streamId.slice(dash + 1);
  if (category === "task" || category === "instance") return rest.split("/")[0] ?? null;
  if (category === "run")
    return projection.workflows.get(rest.slice(0, rest.lastIndexOf("@")))?.project ?? null;
  if (category === "workflow") return projection.workflows.get(rest)?.project ?? null;
  return null;
}

/**
 * Whether a read-limited caller may see an event (one of no project: no). `data` gives the
 * event's data, asked for only of a run's event the projection no longer holds the run of.
 */
export function canReadEvent(
  caller: Caller,
  streamId: string,
  projection: SchedulerProjection,
  data: () => unknown,
): boolean {
  const limit = readLimit(caller);
  if (limit === null) return true;
  const project = projectOfStream(streamId, projection);
  if (project === null || !limit.has(project)) return false;
  // A run's events name its tasks and their outcomes: each task's project must be readable too
  // (as for GET /runs/{id}): the run's as the projection holds it, or, once it keeps only the
  // latest runs, the tasks the event itself names.
  if (streamId.startsWith("run-")) {
    const run = projection.runs.get(streamId.slice("run-".length));
    if (run !== undefined) return runReadable(limit, run);
    return projectsNamedByRunEvent(data()).every((p) => limit.has(p));
  }
  return true;
}

/** Whether every task of `run` is of a project in `limit`. */
export function runReadable(limit: ReadonlySet<string>, run: { readonly tasks: readonly string[] }): boolean {
  return run.tasks.every((t) => limit.has(t.slice(0, t.indexOf("/"))));
}

/** The projects of the tasks a run's event names: a start's keys, a finish's lists of ids. */
function projectsNamedByRunEvent(data: unknown): string[] {
  const projects: string[] = [];
  if (typeof data !== "object" || data === null) return projects;
  for (const value of Object.values(data)) {
    if (!Array.isArray(value)) continue;
    for (const item of value) {
      if (typeof item === "string" && item.includes("/")) projects.push(item.slice(0, item.indexOf("/")));
      else if (typeof item === "object" && item !== null && typeof item.project === "string")
        projects.push(item.project);
    }
  }
  return projects;
}
