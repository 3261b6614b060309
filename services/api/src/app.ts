import { ValidationError } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import type { RemoteWorkers } from "@chronolog/scheduler";
import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { authorize, type Need } from "./auth.js";
import { SECURITY_HEADERS, type StreamLimits } from "./guard.js";
import type { ApiMetrics } from "./metrics.js";
import { serveOpenApi } from "./openapi.js";
import { HttpProblem, problemResponse } from "./problem.js";
import { attemptRoutes } from "./routes/attempts.js";
import { backfillRoutes } from "./routes/backfills.js";
import { declarationRoutes } from "./routes/declarations.js";
import { routeDeps } from "./routes/deps.js";
import { eventRoutes } from "./routes/events.js";
import { healthRoutes } from "./routes/health.js";
import { logRoutes } from "./routes/log.js";
import { metricsRoutes } from "./routes/metrics.js";
import { runRoutes } from "./routes/runs.js";
import { taskRoutes } from "./routes/tasks.js";
import { workerProtocolRoutes } from "./routes/worker-protocol.js";
import { workerRoutes } from "./routes/workers.js";
import type { ApiState } from "./state.js";
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
  /** The metrics: counted per request, and served at `/metrics`. */
  readonly metrics?: ApiMetrics;
  /** Most events an SSE client may fall behind the log before it is dropped (default 50,000). */
  readonly sseMaxLag?: number;
  readonly now?: () => number;
  /** Most live streams open per token and in all (default 16 and 256): more are refused with 429. */
  readonly streamLimits?: Partial<StreamLimits>;
  /** Most `?at=` views folded at once (default 2), and how many more may wait (default 8). */
  readonly asOfBuilds?: { readonly concurrent?: number; readonly queued?: number };
  /**
   * The `Host` headers the server answers (`name:port`); others are refused with 421. Given
   * for a loopback bind, where a DNS-rebinding page could otherwise reach it from a browser.
   */
  readonly allowedHosts?: () => ReadonlySet<string> | null;
  /** The scheduler's remote workers, when it serves them (`chronolog up`); none: the worker routes answer 503. */
  readonly remoteWorkers?: RemoteWorkers | null;
  /** The built web UI served at `/` (default: services/web/dist); null: none. */
  readonly webRoot?: string | null;
}

export const API_PREFIX = "/api/v1";

/** Reads of the workers (their listing), as opposed to the protocol a worker speaks. */
const WORKER_READS = /^\/api\/v1\/workers(\/[^/]+)?$/;

/**
 * What a request needs, known from its method and path alone, so that it is authenticated
 * (401) and its scope checked (403) before its body or query is validated; null: no token (a
 * route that takes none, or no route at all: that one is 404). Each route checks its own need
 * again.
 */
function needsOf(app: OpenAPIHono): (method: string, path: string) => Need | null {
  let routes: Array<{ method: string; pattern: RegExp; secured: boolean }> | null = null;
  return (method, path) => {
    // From the OpenAPI registry, once every route is in it: a route with `security` takes a token.
    routes ??= app.openAPIRegistry.definitions.flatMap((d) =>
      d.type === "route"
        ? [
            {
              method: d.route.method.toUpperCase(),
              pattern: new RegExp(`^${d.route.path.replace(/\{[^}/]+\}/g, "[^/]+")}$`),
              secured: (d.route.security?.length ?? 0) > 0,
            },
          ]
        : [],
    );
    const m = method === "HEAD" ? "GET" : method;
    const route = routes.find((r) => r.method === m && r.pattern.test(path));
    if (!route?.secured) return null;
    // The remote worker protocol (every route under /workers but the listing of them).
    if (path.startsWith(`${API_PREFIX}/workers`) && !(m === "GET" && WORKER_READS.test(path))) return "work";
    if (m === "GET") return "read";
    if (path === `${API_PREFIX}/log/verify`) return "read";
    if (path === `${API_PREFIX}/declarations`) return "declare";
    return "operate";
  };
}

/**
 * The HTTP API as a Hono app: every route calls the functions the CLI calls, on the API's own
 * projection, and writes as `api:<token name>`. The routes are in `routes/`, a group to a
 * file, each a sub-app mounted here under the API's prefix; this file only wires them.
 */
export function createApiApp(o: ApiAppOptions): OpenAPIHono {
  const app = new OpenAPIHono({
    // The sub-apps' validation refusals too: a sub-app without a hook of its own uses this one.
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
  const deps = routeDeps(o);
  const needOf = needsOf(app);
  app.onError((error, c) => problemResponse(c, error));
  if (o.metrics) {
    const metrics = o.metrics;
    app.use("*", async (c, next) => {
      await next();
      // The route's pattern, never its values: the label's values stay few.
      metrics.request(c.req.method, c.req.routePath, c.res.status);
    });
  }
  // The edge, before anything else: every answer's security headers, the Host allowlist, a path
  // that decodes, and the token (before a body or a query is looked at).
  app.use("*", async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
  });
  if (o.allowedHosts) {
    const allowedHosts = o.allowedHosts;
    app.use("*", async (c, next) => {
      const hosts = allowedHosts();
      const host = (c.req.header("host") ?? "").toLowerCase();
      if (hosts && !hosts.has(host))
        return problemResponse(
          c,
          new HttpProblem(
            421,
            "misdirected",
            `this server answers only to ${[...hosts].join(", ")}, not to Host ${JSON.stringify(host.slice(0, 100))}`,
          ),
        );
      await next();
    });
  }
  app.use("*", async (c, next) => {
    try {
      decodeURIComponent(new URL(c.req.url).pathname);
    } catch {
      return problemResponse(
        c,
        new HttpProblem(400, "validation", "the path has a malformed percent-encoding (such as %E0%A4%A)"),
      );
    }
    const need = needOf(c.req.method, c.req.path);
    if (need) {
      authorize(c, await o.state.currentTokens(), need, !!o.publicRead);
      deps.remember(c);
    }
    await next();
  });
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

  // Mounted after the middleware above, which applies to them only so.
  for (const routes of [
    healthRoutes,
    declarationRoutes,
    taskRoutes,
    attemptRoutes,
    runRoutes,
    backfillRoutes,
    logRoutes,
    eventRoutes,
    workerRoutes,
  ])
    app.route(API_PREFIX, routes(deps));
  app.route(API_PREFIX, workerProtocolRoutes(deps, o.remoteWorkers ?? null));
  if (o.metrics) app.route("/", metricsRoutes(o.metrics, API_PREFIX));
  uiRoutes(app, { state: o.state, who: deps.who, readView: deps.readView });
  serveOpenApi(app, `${API_PREFIX}/openapi.json`);
  return app;
}
