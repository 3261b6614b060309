import type { Context } from "hono";
import { HttpProblem } from "./problem.js";
import type { AccessScope, AccessToken, TokenBook } from "./tokens/index.js";

/** What a route needs: a read, a declaration, an operator's action, or an administrator. */
export type Need = "read" | "declare" | "operate" | "admin";

const GRANTS: Readonly<Record<AccessScope, ReadonlySet<Need>>> = {
  read: new Set(["read"]),
  declare: new Set(["read", "declare"]),
  operate: new Set(["read", "operate"]),
  admin: new Set(["read", "declare", "operate", "admin"]),
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

/** Refuses a write to a project the caller's token is not limited to (403). */
export function requireProjects(caller: Caller, projects: Iterable<string>, what: string): void {
  const limit = caller.token?.projects ?? [];
  if (limit.length === 0) return;
  for (const p of projects)
    if (!limit.includes(p))
      throw new HttpProblem(
        403,
        "forbidden",
        `token ${caller.token?.name} is limited to ${limit.join(", ")}: it cannot ${what} in project ${p}`,
        { project: p, projects: limit },
      );
}

/** Whether the caller's token is limited to some projects. */
export const isProjectLimited = (caller: Caller) => (caller.token?.projects.length ?? 0) > 0;
