import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { ApiMetrics } from "../metrics.js";

/**
 * The metrics in Prometheus' text format, at `/metrics` (where Prometheus looks by default)
 * and under the API's prefix; no token needed. Mounted at the root.
 */
export function metricsRoutes(metrics: ApiMetrics, apiPrefix: string): OpenAPIHono {
  const app = new OpenAPIHono();
  const scrape = async () =>
    new Response(await metrics.registry.metrics(), {
      headers: { "content-type": metrics.registry.contentType },
    });
  const paths = [
    ["/metrics", "scrapeMetrics"],
    [`${apiPrefix}/metrics`, "getMetrics"],
  ] as const;
  for (const [path, operationId] of paths)
    app.openapi(
      createRoute({
        method: "get",
        path,
        operationId,
        summary: "the scheduler's and the API's metrics, in Prometheus' text format (no token needed)",
        responses: {
          200: { description: "the metrics", content: { "text/plain": { schema: z.string() } } },
        },
      }),
      scrape as never,
    );
  return app;
}
