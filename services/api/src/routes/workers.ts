import { workerListing } from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { canRead } from "../auth.js";
import { needsToken } from "../openapi.js";
import { atQuery } from "../read-view.js";
import * as S from "../schemas.js";
import { toJson } from "../state.js";
import type { RouteDeps } from "./deps.js";
import { json, jsonText } from "./http.js";

const WorkersQuery = atQuery.extend({
  all: z
    .enum(["true", "false"])
    .optional()
    .openapi({ description: "true: also the workers gone recently, with why" }),
});

/** Remote workers: those connected, what each runs, and those gone recently (`chronolog workers`). */
export function workerRoutes(d: RouteDeps): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(
    createRoute({
      method: "get",
      path: "/workers",
      operationId: "listWorkers",
      security: needsToken,
      summary: "remote workers connected: queues, load, version, since when and what each runs",
      request: { query: WorkersQuery },
      responses: { 200: json(S.WorkerListing, "the workers"), ...S.problemResponses(400, 401, 403) },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const { all, at } = c.req.valid("query");
      const v = await d.readView(c, at);
      // Every worker is listed; the attempts of projects the token may not read only counted.
      const listing = workerListing(v.projection, {
        all: all === "true",
        canReadProject: (project) => canRead(caller, project),
      });
      return jsonText(c, toJson(listing));
    },
  );
  return app;
}
