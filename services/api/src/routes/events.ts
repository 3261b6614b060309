import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { streamSSE } from "hono/streaming";
import { canReadEvent, readLimit } from "../auth.js";
import { needsToken } from "../openapi.js";
import { problemResponses } from "../schemas.js";
import type { RouteDeps } from "./deps.js";

const PAGE = 500;
const KEEPALIVE_MS = 15_000;

/**
 * `GET /events`: the log as Server-Sent Events, each with its position as its id, so a client
 * that reconnects with `Last-Event-ID` (or `?from=`) resumes at the next event, nothing lost or
 * repeated. A client reads at its own pace from the API's window of recent events (or from the
 * log, further back); the server holds no queue per client. One that falls more than `maxLag`
 * events behind the head while live is dropped with a `dropped` event that says why, and may
 * resume from where it got to.
 */
export function eventRoutes(d: RouteDeps): OpenAPIHono {
  const { state, metrics } = d;
  const maxLag = d.sseMaxLag;
  const app = new OpenAPIHono();
  app.openapi(
    createRoute({
      method: "get",
      path: "/events",
      operationId: "streamEvents",
      security: needsToken,
      summary: "live events as Server-Sent Events (id: log position; resume with Last-Event-ID)",
      description:
        "A browser's EventSource sends no headers: this route alone also takes the token as `?access_token=`.",
      request: {
        query: z.object({
          from: z
            .string()
            .regex(/^\d+$/)
            .optional()
            .openapi({ description: "first position (default: the head's next)" }),
        }),
        headers: z.object({ "last-event-id": z.string().regex(/^\d+$/).optional() }),
      },
      responses: {
        200: { description: "the stream", content: { "text/event-stream": { schema: z.string() } } },
        ...problemResponses(400, 401, 403, 429),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      // Refused here (429) while a problem document can still be the answer.
      const slot = d.streams.admit(caller);
      // A token limited to some projects' reads hears their events only.
      const limited = readLimit(caller) !== null;
      const lastId = c.req.valid("header")["last-event-id"];
      const fromQuery = c.req.valid("query").from;
      let next =
        lastId !== undefined
          ? BigInt(lastId) + 1n
          : fromQuery !== undefined
            ? BigInt(fromQuery)
            : state.head.position + 1n;
      return streamSSE(c, async (sse) => {
        let closed = false;
        let live = false;
        let dropped: string | null = null;
        // The client gone (its socket closed) or its token revoked: the wait for the next event
        // ends now, and the stream's place is given back at once, not at the next keepalive.
        const gone = new AbortController();
        const end = () => {
          closed = true;
          gone.abort();
          slot.release();
        };
        sse.onAbort(end);
        (c.env as { outgoing?: import("node:http").ServerResponse } | undefined)?.outgoing?.once(
          "close",
          end,
        );
        // Its token revoked: the stream ends at once, before another event is written to it.
        slot.onRevoke(() => {
          end();
          void sse.close();
        });
        metrics?.sseClients(+1);
        // Watches the lag while this client's writes may be blocked on a slow socket.
        const stopWatching = state.onEvent((e) => {
          const behind = e.position - next + 1n;
          if (live && !dropped && behind > BigInt(maxLag)) {
            dropped = `fell ${behind} events behind the log (the limit is ${maxLag}); reconnect with Last-Event-ID ${next - 1n} to resume`;
            metrics?.sseDropped();
            // Closed only once `dropped` is queued: writeSSE queues its write a step later
            // than close() would queue the close, which would make the write fail unseen.
            void sse
              .writeSSE({ event: "dropped", data: JSON.stringify({ reason: dropped, next: String(next) }) })
              .finally(() => sse.close());
          }
        });
        try {
          // A comment at once: the answer's headers go out now, not with the first event.
          await sse.write(": open\n\n");
          while (!closed && !dropped) {
            const events = await state.eventsFrom(next, PAGE);
            if (events.length === 0) {
              live = true;
              // An event applied while the read above was under way is read now, not after a wait.
              if (state.head.position >= next) continue;
              await state.changed(KEEPALIVE_MS, gone.signal);
              if (!closed && !dropped && state.head.position < next) await sse.write(": keepalive\n\n");
              continue;
            }
            for (const e of events) {
              if (closed || dropped) break;
              // Counted as sent once queued: a `dropped` written while this write waits on a
              // slow socket goes out after it, and must name the position after this one.
              next = e.position + 1n;
              if (limited && !canReadEvent(caller, e.streamId, state.projection, () => e.data)) continue;
              await sse.writeSSE({ id: String(e.position), event: e.type, data: e.json });
            }
          }
        } finally {
          slot.release();
          stopWatching();
          metrics?.sseClients(-1);
        }
      });
    },
  );
  return app;
}
