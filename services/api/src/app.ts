import { ValidationError } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
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
  /** The built web UI served at `/` (default: services/web/dist); null: none. */
  readonly webRoot?: string | null;
}

export const API_PREFIX = "/api/v1";

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
  ])
    app.route(API_PREFIX, routes(deps));
  if (o.metrics) app.route("/", metricsRoutes(o.metrics, API_PREFIX));
  uiRoutes(app, { state: o.state, who: deps.who, readView: deps.readView });
  serveOpenApi(app, `${API_PREFIX}/openapi.json`);
  return app;
}
