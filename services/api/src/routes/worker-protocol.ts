import { EventSchemas, queueName } from "@chronolog/core";
import { type RemoteConnection, RemoteRefusal, type RemoteWorkers } from "@chronolog/scheduler";
import {
  INLINE_OUTPUT_MAX,
  MAX_OUTPUT_CHUNK,
  MAX_REPORT_BATCH,
  SESSION_HEADER,
  type WorkerReport,
} from "@chronolog/worker";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { Caller } from "../auth.js";
import { needsToken } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { problemResponses } from "../schemas.js";
import type { RouteDeps } from "./deps.js";
import { json } from "./http.js";

const workerId = z
  .string()
  .min(1)
  .max(128)
  .openapi({ description: "the worker's id (letters, digits, _, ., : and -)", example: "gpu-box-1" });
const token = z.string().min(1).max(256);

const RegisterRequest = z
  .object({
    protocol: z.number().int().openapi({ description: "the protocol version the worker speaks", example: 1 }),
    id: z.string().min(1).max(128),
    host: z
      .string()
      .regex(/^[^\s\p{C}]{1,255}$/u, "a host is 1 to 255 characters, none a space or a control character"),
    queues: z.array(queueName).min(1).max(64),
    capacity: z.number().int().min(1).max(100_000),
    version: z
      .string()
      .regex(/^[^\p{C}]{1,100}$/u, "a version is 1 to 100 characters, none a control character")
      .openapi({ example: "chronolog 0.1.0" }),
    running: z.array(token).max(100_000).default([]),
  })
  .openapi("WorkerRegistration");

const RegisterAnswer = z
  .object({
    protocol: z.number().int(),
    session: z.string(),
    actor: z.string(),
    adopted: z.array(z.string()),
    stop: z.array(z.string()),
    keepaliveMs: z.number().int(),
    silenceMs: z.number().int(),
    outputMaxBytes: z.number().int(),
    maxOutputChunk: z.number().int(),
    maxReportBatch: z.number().int(),
    inlineOutputMax: z.number().int().optional(),
    now: z.number().int().openapi({
      description:
        "the scheduler's clock as it answered (epoch ms): with the `at` of each `commands` event, the worker tells a command that came late",
    }),
  })
  .openapi("WorkerRegistered");

const base = {
  token,
  attempt: z.number().int().min(1),
  instanceStream: z.string().min(1).max(1024),
  workerId: z.string().max(128),
  at: z.string().max(64),
};
const tail = z.string().max(16_384);
const outputFile = z.object({
  path: z.string().max(4096),
  bytes: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  cutBytes: z.number().int().min(0),
  error: z.string().max(2000).optional(),
});
const ending = {
  ...base,
  durationMs: z.number().min(0),
  exitCode: z.number().int().nullable(),
  stdoutTail: tail,
  stderrTail: tail,
  outputFile: outputFile.optional(),
  // The rest of the output not uploaded yet, base64, at most INLINE_OUTPUT_MAX bytes decoded.
  outputRest: z
    .object({
      offset: z.number().int().min(0),
      data: z
        .string()
        .max(Math.ceil(INLINE_OUTPUT_MAX / 3) * 4)
        .regex(/^[A-Za-z0-9+/]*={0,2}$/),
    })
    .optional(),
};
const Report = z
  .discriminatedUnion("kind", [
    z.object({
      kind: z.literal("started"),
      ...base,
      pid: z.number().int(),
      outputPath: z.string().max(4096).optional(),
    }),
    z.object({ kind: z.literal("heartbeat"), ...base }),
    z.object({ kind: z.literal("succeeded"), ...ending }),
    z.object({
      kind: z.literal("failed"),
      ...ending,
      error: z.object({
        kind: EventSchemas.AttemptFailed.shape.error.shape.kind,
        message: z.string().max(4000),
      }),
      // Ended while queued on the worker, never begun: no start is claimed for it.
      neverStarted: z.literal(true).optional(),
    }),
    z.object({
      kind: z.literal("known"),
      requestId: z.string().max(128),
      workerId: z.string().max(128),
      running: z.array(token).max(100_000),
    }),
    z.object({
      kind: z.literal("ready"),
      workerId: z.string().max(128),
      pid: z.number().int(),
      capacity: z.number().int(),
    }),
  ])
  .openapi("WorkerReport");
const ReportsRequest = z.object({ messages: z.array(Report).max(MAX_REPORT_BATCH) }).openapi("WorkerReports");
const Refused = z.object({ kind: z.string(), token: z.string(), reason: z.string() });
const ReportsAnswer = z
  .object({
    accepted: z.number().int(),
    refused: z.array(Refused),
    now: z.number().int().openapi({ description: "the scheduler's clock as it answered (epoch ms)" }),
  })
  .openapi("WorkerReportsAccepted");

const session = z.object({
  [SESSION_HEADER]: z.string().min(1).max(64).openapi({ description: "the session its registration gave" }),
});
const idParam = z.object({ id: workerId });

/** A scheduler's answer to a refusal of the remote workers, as a problem document. */
function problemOf(error: unknown): unknown {
  if (error instanceof RemoteRefusal)
    return new HttpProblem(error.status, error.kind, error.message, error.fields);
  return error;
}

/**
 * The remote worker protocol (version 1; docs/remote-workers.md): a worker registers, reads its
 * commands from a Server-Sent Events stream, posts its reports in batches and its attempts'
 * output in chunks. Plain HTTP/1.1 requests out from the worker: it crosses proxies and
 * firewalls that let HTTPS out, and any language's standard library speaks it. Only a `work`
 * token (for the queues it names) or an admin's may use these routes.
 */
export function workerProtocolRoutes(d: RouteDeps, workers: RemoteWorkers | null): OpenAPIHono {
  const app = new OpenAPIHono();
  // A revoked token's workers are dropped at once.
  if (workers)
    d.state.onEvent((e) => {
      if (e.type === "AccessTokenRevoked") workers.dropToken(e.data.name);
    });
  const need = (): RemoteWorkers => {
    if (!workers)
      throw new HttpProblem(
        503,
        "no_scheduler",
        "this server schedules nothing: connect workers to the API of `chronolog up` (or `chronolog scheduler`)",
      );
    return workers;
  };
  /** The registration the request speaks for: its session, and the token that made it. */
  const connection = async (c: Context, id: string): Promise<RemoteConnection> => {
    const caller = await d.who(c, "work");
    let conn: RemoteConnection;
    try {
      conn = need().connection(id, c.req.header(SESSION_HEADER));
    } catch (error) {
      throw problemOf(error);
    }
    if (caller.token?.name !== conn.tokenName)
      throw new HttpProblem(
        403,
        "forbidden",
        `worker ${id} registered with another token: only that one may speak for it`,
      );
    return conn;
  };
  /** The queues the caller may serve (null: any); a token limited to projects may serve none. */
  const callerQueues = (caller: Caller) => {
    const t = caller.token;
    if (t && (t.projects.length > 0 || t.readProjects.length > 0))
      throw new HttpProblem(
        403,
        "forbidden",
        `token ${t.name} is limited to projects: it may not serve queues, whose attempts are of every project (use a work token of no project)`,
      );
    return t?.scope === "work" ? t.queues : null;
  };

  app.openapi(
    createRoute({
      method: "post",
      path: "/workers",
      operationId: "registerWorker",
      security: needsToken,
      summary: "a remote worker registers: its queues, capacity and the attempts it still runs",
      request: { body: { required: true, content: { "application/json": { schema: RegisterRequest } } } },
      responses: {
        200: json(
          RegisterAnswer,
          "registered: the session, and which announced attempts are adopted or to stop",
        ),
        ...problemResponses(400, 401, 403, 503),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "work");
      const queues = callerQueues(caller);
      const body = c.req.valid("json");
      try {
        const answer = await need().register(body, { tokenName: caller.token?.name, queues });
        return c.json(answer, 200);
      } catch (error) {
        throw problemOf(error);
      }
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/workers/{id}/commands",
      operationId: "streamWorkerCommands",
      security: needsToken,
      summary: "the worker's commands as Server-Sent Events (`commands`, `ping`, `closed`)",
      description:
        "Each `commands` event's data is `{messages: [...], at}`: run, proceed, query, cancel and shutdown commands, in order, and the scheduler's clock (epoch ms) when the oldest of them was queued; an idempotent run that reaches the worker a quarter of its lease or more after that, by the scheduler's clock as its answers give it, runs only once its `started` report is accepted. `ping` comes every keepalive; `closed` says why the scheduler ended the stream.",
      request: { params: idParam, headers: session },
      responses: {
        200: { description: "the stream", content: { "text/event-stream": { schema: z.string() } } },
        ...problemResponses(401, 403, 409, 503),
      },
    }),
    async (c) => {
      const conn = await connection(c, c.req.valid("param").id);
      const hub = need();
      return streamSSE(c, async (sse) => {
        let done: () => void = () => {};
        const ended = new Promise<void>((resolve) => {
          done = resolve;
        });
        let seq = 0;
        let closed = false;
        const detach = hub.attach(conn, {
          send: async (batch) => {
            if (closed) throw new Error("the stream is closed");
            seq += 1;
            await sse.writeSSE({ id: String(seq), event: "commands", data: JSON.stringify(batch) });
          },
          ping: async () => {
            if (closed) throw new Error("the stream is closed");
            await sse.writeSSE({ event: "ping", data: "{}" });
          },
          close: (reason) => {
            if (closed) return;
            closed = true;
            void sse
              .writeSSE({ event: "closed", data: JSON.stringify({ reason }) })
              .catch(() => {})
              .finally(() => {
                void sse.close();
                done();
              });
          },
        });
        const end = () => {
          if (!closed) {
            closed = true;
            detach();
          }
          done();
        };
        sse.onAbort(end);
        (c.env as { outgoing?: import("node:http").ServerResponse } | undefined)?.outgoing?.once(
          "close",
          end,
        );
        await sse.write(": open\n\n");
        await ended;
      });
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/workers/{id}/reports",
      operationId: "postWorkerReports",
      security: needsToken,
      summary: "a batch of the worker's reports (started, heartbeat, succeeded, failed, known)",
      description:
        "A report whose attempt was not dispatched to this worker, or is no longer current, is refused (409, listed in `refused`) and recorded as WorkerReportRefused, never applied; the others in the batch are applied.",
      request: {
        params: idParam,
        headers: session,
        body: { required: true, content: { "application/json": { schema: ReportsRequest } } },
      },
      responses: {
        200: json(ReportsAnswer, "every report accepted"),
        ...problemResponses(400, 401, 403, 409, 503),
      },
    }),
    async (c) => {
      const conn = await connection(c, c.req.valid("param").id);
      const { messages } = c.req.valid("json");
      const answer = await need().receive(conn, messages as readonly WorkerReport[]);
      if (answer.refused.length > 0)
        throw new HttpProblem(
          409,
          "report_refused",
          `${answer.refused.length} of ${messages.length} reports refused: ${answer.refused[0]?.reason}${answer.refused.length > 1 ? " (and more: see refused)" : ""}`,
          { accepted: answer.accepted, refused: answer.refused, now: answer.now },
        );
      return c.json(answer, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/workers/{id}/attempts/{token}/output",
      operationId: "putWorkerOutput",
      security: needsToken,
      summary: "a chunk of an attempt's output, at `offset` (where what the scheduler holds ends)",
      request: {
        params: z.object({ id: workerId, token }),
        query: z.object({ offset: z.string().regex(/^\d{1,15}$/) }),
        headers: session,
        body: {
          required: true,
          content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
        },
      },
      responses: {
        200: json(z.object({ bytes: z.number().int() }), "kept: the output's size here now"),
        ...problemResponses(400, 401, 403, 409, 413, 503),
      },
    }),
    async (c) => {
      const { id, token: t } = c.req.valid("param");
      const conn = await connection(c, id);
      const chunk = new Uint8Array(await c.req.arrayBuffer());
      if (chunk.length > MAX_OUTPUT_CHUNK)
        throw new HttpProblem(413, "body_too_large", `an output chunk is at most ${MAX_OUTPUT_CHUNK} bytes`, {
          limitBytes: MAX_OUTPUT_CHUNK,
        });
      try {
        const bytes = need().writeOutput(conn, t, Number(c.req.valid("query").offset), chunk);
        return c.json({ bytes }, 200);
      } catch (error) {
        throw problemOf(error);
      }
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/workers/{id}",
      operationId: "unregisterWorker",
      security: needsToken,
      summary: "the worker says goodbye: it takes nothing more",
      request: { params: idParam, headers: session },
      responses: {
        200: json(z.object({ ok: z.literal(true) }), "gone"),
        ...problemResponses(401, 403, 409, 503),
      },
    }),
    async (c) => {
      const conn = await connection(c, c.req.valid("param").id);
      await need().goodbye(conn);
      return c.json({ ok: true as const }, 200);
    },
  );
  return app;
}
