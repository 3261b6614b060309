import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { type AttemptView, foldInstance, formatTaskKey } from "@chronolog/core";
import {
  abandonAttempt,
  activeInstanceOfToken,
  localOutputPath,
  locateOutput,
  NotFoundError,
  outsideOutputMessage,
} from "@chronolog/scheduler";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { stream } from "hono/streaming";
import { requireProjects, requireReadable } from "../auth.js";
import { needsToken } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import * as S from "../schemas.js";
import type { RouteDeps } from "./deps.js";
import { json, optionalBody, optionalJson } from "./http.js";

const ENDED: ReadonlySet<AttemptView["status"]> = new Set([
  "success",
  "failed",
  "interrupted",
  "abandoned",
  "cancelled",
]);
const FILE_POLL_MS = 200;
const LOG_POLL_MS = 500;

const TokenParam = z.object({ token: z.string() });
const AbandonBody = z.object({
  retry: z.boolean().optional(),
  reason: z.string().min(1).max(2000).optional(),
});

/**
 * One attempt, by its token. `GET /attempts/{token}/output`: its whole output file, as
 * `chronolog logs` prints it. For an attempt that ended, the headers say whether the file
 * still matches the size and SHA-256 its end recorded (`Chronolog-Output-Check: ok | changed
 * | unchecked`); with `follow=true` the body grows while the attempt runs and ends when it
 * does. `POST /attempts/{token}/abandon`: give up on one in flight.
 */
export function attemptRoutes(d: RouteDeps): OpenAPIHono {
  const { state } = d;
  const app = new OpenAPIHono();
  const attemptOf = async (token: string) => {
    // In flight: the projection knows it; ended: the history index does.
    const streamId =
      activeInstanceOfToken(state.projection, token)?.stream ?? (await state.streamOfToken(token));
    if (!streamId) throw new NotFoundError(`no attempt has token ${token}`);
    const inst = foldInstance(await state.log.readStream(streamId));
    const a = inst?.attempts.find((x) => x.token === token);
    if (!a) throw new NotFoundError(`no attempt has token ${token}`);
    // `instance-<project>/<account>/...`: the project the attempt is in.
    return { a, project: streamId.slice("instance-".length).split("/")[0] as string };
  };
  app.openapi(
    createRoute({
      method: "get",
      path: "/attempts/{token}/output",
      operationId: "getAttemptOutput",
      security: needsToken,
      summary: "an attempt's whole output (stdout and stderr as they came); follow=true streams it live",
      request: {
        params: TokenParam,
        query: z.object({ follow: z.enum(["true", "false"]).optional() }),
      },
      responses: {
        200: {
          description: "the output",
          content: { "text/plain": { schema: z.string() } },
          headers: z.object({
            "Chronolog-Attempt-Status": z.string(),
            "Chronolog-Output-Check": z.enum(["ok", "changed", "unchecked", "running"]),
          }),
        },
        ...S.problemResponses(401, 403, 404, 429),
      },
    }),
    async (c) => {
      const caller = await d.who(c, "read");
      const { token } = c.req.valid("param");
      const follow = c.req.valid("query").follow === "true";
      const first = await attemptOf(token);
      requireReadable(caller, [first.project], "an attempt's output");
      let { a } = first;
      const path = () => localOutputPath(a, d.dataDir);
      if (!follow) {
        const found = locateOutput(a, d.dataDir);
        if (found && "outside" in found)
          throw new HttpProblem(
            403,
            "output_outside",
            `attempt ${token}: ${outsideOutputMessage(found.outside, d.dataDir)}`,
          );
        const file = path();
        if (!file)
          throw new NotFoundError(
            `attempt ${token}: ${(a.outputFile?.path ?? a.outputPath) ? "its output file is not on this machine" : ENDED.has(a.status) ? "its worker kept no output file" : "it has not started"}`,
          );
        const bytes = await readWhole(file);
        const check = checkOf(a, bytes);
        return c.body(new Uint8Array(bytes), 200, {
          "content-type": "text/plain; charset=utf-8",
          "chronolog-attempt-status": a.status,
          "chronolog-output-check": check,
        }) as never;
      }
      const slot = d.streams.admit(caller);
      c.header("content-type", "text/plain; charset=utf-8");
      c.header("chronolog-attempt-status", a.status);
      c.header("chronolog-output-check", "running");
      return stream(c, async (out) => {
        let offset = 0;
        let lastLogRead = Date.now();
        let aborted = false;
        const end = () => {
          aborted = true;
          slot.release();
        };
        out.onAbort(end);
        (c.env as { outgoing?: import("node:http").ServerResponse } | undefined)?.outgoing?.once(
          "close",
          end,
        );
        slot.onRevoke(() => {
          end();
          void out.close();
        });
        const drain = async () => {
          const file = path();
          if (!file) return;
          const fh = await open(file, "r");
          try {
            const buf = Buffer.alloc(64 * 1024);
            for (;;) {
              const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
              if (bytesRead === 0) return;
              offset += bytesRead;
              await out.write(new Uint8Array(buf.subarray(0, bytesRead)));
            }
          } finally {
            await fh.close();
          }
        };
        try {
          while (!aborted) {
            await drain();
            if (ENDED.has(a.status)) break;
            await new Promise((r) => setTimeout(r, FILE_POLL_MS));
            if (Date.now() - lastLogRead >= LOG_POLL_MS) {
              lastLogRead = Date.now();
              ({ a } = await attemptOf(token));
            }
          }
          if (!aborted) await drain();
        } finally {
          slot.release();
        }
      }) as never;
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/attempts/{token}/abandon",
      operationId: "abandonAttempt",
      security: needsToken,
      summary: "abandon an attempt in flight (its worker will not report); retry: a new attempt follows",
      request: { params: TokenParam, body: optionalBody(AbandonBody) },
      responses: { 200: json(S.Written, "abandoned"), ...S.problemResponses(400, 401, 403, 404, 409, 422) },
    }),
    async (c) => {
      const caller = await d.who(c, "operate");
      const { token } = c.req.valid("param");
      const body = await optionalJson(c, AbandonBody);
      const inst = activeInstanceOfToken(state.projection, token);
      if (!inst) throw new NotFoundError(`no attempt in flight has token ${token}`);
      const id = formatTaskKey(inst.key);
      requireProjects(caller, [inst.key.project], "abandon attempts");
      const r = await abandonAttempt(d.writer(caller), await state.writeProjection(), id, {
        interval: inst.logicalDate,
        token,
        retry: !!body.retry,
        reason: body.reason ?? "abandoned by an operator",
        by: caller.actor,
      });
      return c.json({ task: id, ...r, position: String(r.position) }, 200);
    },
  );
  return app;
}

async function readWhole(file: string): Promise<Buffer> {
  const fh = await open(file, "r");
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/** Whether the file is what the attempt's end recorded. */
function checkOf(a: AttemptView, bytes: Buffer): "ok" | "changed" | "unchecked" | "running" {
  if (!ENDED.has(a.status)) return "running";
  const file = a.outputFile;
  if (!file) return "unchecked";
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return bytes.length === file.bytes && sha256 === file.sha256 ? "ok" : "changed";
}
