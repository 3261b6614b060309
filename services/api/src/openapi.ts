import type { OpenAPIHono } from "@hono/zod-openapi";

/** The name of the bearer scheme in the document's components. */
const BEARER = "bearer";

/**
 * Serves the OpenAPI document of every route registered on `app` (those of its sub-apps
 * included) at `path`.
 */
export function serveOpenApi(app: OpenAPIHono, path: string): void {
  app.doc31(path, {
    openapi: "3.1.0",
    info: {
      title: "Chronolog",
      version: "1",
      description: "An event-sourced task scheduler: declarations, tasks, runs, the log, live events.",
    },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", BEARER, {
    type: "http",
    scheme: "bearer",
  });
}
