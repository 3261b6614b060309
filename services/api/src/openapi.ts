import type { OpenAPIHono } from "@hono/zod-openapi";

/** The name of the bearer scheme in the document's components. */
const BEARER = "bearer";

/**
 * The `security` of every operation that needs a token (a read on a `--public-read` server
 * needs none, but a token is always accepted): what tells a generated client to send it.
 */
export const needsToken = [{ [BEARER]: [] }];

/**
 * Serves the OpenAPI document of every route registered on `app` (those of its sub-apps
 * included) at `path`. Its one server is the one serving it: every path carries its own
 * prefix, so a client's base URL is the server's origin.
 */
export function serveOpenApi(app: OpenAPIHono, path: string): void {
  app.doc31(path, {
    openapi: "3.1.0",
    info: {
      title: "Chronolog",
      version: "1",
      description: "An event-sourced task scheduler: declarations, tasks, runs, the log, live events.",
    },
    servers: [{ url: "/", description: "the server that serves this document" }],
  });
  app.openAPIRegistry.registerComponent("securitySchemes", BEARER, {
    type: "http",
    scheme: "bearer",
    description: "a token from `chronolog token create`: `Authorization: Bearer chl.NAME.SECRET`",
  });
}
