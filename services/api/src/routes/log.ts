import type { EventLog } from "@chronolog/log";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { canReadEvent } from "../auth.js";
import { needsToken } from "../openapi.js";
import * as S from "../schemas.js";
import { wireEvent } from "../state.js";
import type { RouteDeps } from "./deps.js";
import { json, jsonText } from "./http.js";

const LogQuery = z.object({
  from: z.string().regex(/^\d+$/).default("0"),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
});

/** The last event's position and hash; position -1 and no hash for an empty log. */
async function headOf(log: EventLog): Promise<{ position: string; hash: string }> {
  const head = await log.headPosition();
  if (head < 0n) return { position: "-1", hash: "" };
  const [last] = await log.readAll({ fromPosition: head, maxCount: 1 });
  return { position: String(head), hash: last?.metadata.hash ?? "" };
}

/** The log itself: its events a page at a time, its head, and a walk of its hash chain. */
export function logRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  app.openapi(
    createRoute({
      method: "get",
      path: "/log",
      operationId: "readLog",
      security: needsToken,
      summary: "events from a position, a page at a time",
      request: { query: LogQuery },
      responses: {
        200: json(z.object({ events: z.array(S.RecordedEvent), next: z.string().nullable() }), "a page"),
        ...S.problemResponses(400, 401, 403),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const q = c.req.valid("query");
      const events = await state.log.readAll({ fromPosition: BigInt(q.from), maxCount: q.limit });
      const last = events.at(-1);
      const next = last && events.length === q.limit ? String(last.position + 1n) : null;
      // A token limited to some projects' reads gets their events only (a page may hold fewer).
      const shown = events.filter((e) => canReadEvent(caller, e.streamId, state.projection, () => e.data));
      return jsonText(
        c,
        `{"events":[${shown.map((e) => wireEvent(e).json).join(",")}],"next":${JSON.stringify(next)}}`,
      );
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/log/head",
      operationId: "getLogHead",
      security: needsToken,
      summary: "the log's head: the last event's position and hash",
      responses: { 200: json(S.Head, "the head"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await d.who(c, "read");
      return c.json(await headOf(state.log), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/log/verify",
      operationId: "verifyLog",
      security: needsToken,
      summary: "walk the log and check its hash chain (writes nothing)",
      responses: { 200: json(S.Verify, "the result"), ...S.problemResponses(401, 403) },
    }),
    async (c) => {
      await d.who(c, "read");
      const result = await state.log.verify();
      const head = await headOf(state.log);
      return c.json(
        {
          ok: result.break === null,
          checked: result.checked,
          headPosition: String(result.headPosition),
          headHash: head.position === String(result.headPosition) ? head.hash : "",
          break: result.break
            ? { position: String(result.break.position), reason: result.break.reason }
            : null,
        },
        200,
      );
    },
  );
  return app;
}
