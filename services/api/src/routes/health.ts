import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { RouteDeps } from "./deps.js";
import { json } from "./http.js";

const Readiness = z.object({ ready: z.boolean(), position: z.string() });

/** `/healthz` and `/readyz`: for a load balancer or an orchestrator; no token needed. */
export function healthRoutes(d: RouteDeps): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(
    createRoute({
      method: "get",
      path: "/healthz",
      operationId: "getHealth",
      summary: "the server answers",
      responses: { 200: json(z.object({ ok: z.literal(true) }), "alive") },
    }),
    (c) => c.json({ ok: true as const }, 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/readyz",
      operationId: "getReadiness",
      summary: "ready once the projection holds what the log held when the server started",
      responses: { 200: json(Readiness, "ready"), 503: json(Readiness, "still catching up") },
    }),
    (c) =>
      c.json(
        { ready: d.state.ready, position: String(d.state.projection.position) },
        d.state.ready ? 200 : 503,
      ),
  );
  return app;
}
