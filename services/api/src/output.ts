import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { type AttemptView, foldInstance } from "@chronolog/core";
import { activeInstanceOfToken, localOutputPath, NotFoundError } from "@chronolog/scheduler";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { stream } from "hono/streaming";
import type { Caller, Need } from "./auth.js";
import { problemResponses } from "./schemas.js";
import type { ApiState } from "./state.js";

const ENDED: ReadonlySet<AttemptView["status"]> = new Set(["success", "failed", "abandoned", "cancelled"]);
const FILE_POLL_MS = 200;
const LOG_POLL_MS = 500;

/**
 * `GET /attempts/{token}/output`: an attempt's whole output file, as `chronolog logs` prints
 * it. For an attempt that ended, the headers say whether the file still matches the size and
 * SHA-256 its end recorded (`Chronolog-Output-Check: ok | changed | unchecked`); with
 * `follow=true` the body grows while the attempt runs and ends when it does.
 */
export function outputRoute(
  app: OpenAPIHono,
  o: { state: ApiState; dataDir: string; who: (c: Context, need: Need) => Promise<Caller> },
): void {
  const { state } = o;
  const attemptOf = async (token: string) => {
    // In flight: the projection knows it; ended: the history index does.
    const streamId =
      activeInstanceOfToken(state.projection, token)?.stream ?? (await state.streamOfToken(token));
    if (!streamId) throw new NotFoundError(`no attempt has token ${token}`);
    const inst = foldInstance(await state.log.readStream(streamId));
    const a = inst?.attempts.find((x) => x.token === token);
    if (!a) throw new NotFoundError(`no attempt has token ${token}`);
    return { a };
  };
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/v1/attempts/{token}/output",
      summary: "an attempt's whole output (stdout and stderr as they came); follow=true streams it live",
      request: {
        params: z.object({ token: z.string() }),
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
        ...problemResponses(401, 403, 404),
      },
    }),
    async (c) => {
      await o.who(c, "read");
      const { token } = c.req.valid("param");
      const follow = c.req.valid("query").follow === "true";
      let { a } = await attemptOf(token);
      const path = () => localOutputPath(a, o.dataDir);
      if (!follow) {
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
      c.header("content-type", "text/plain; charset=utf-8");
      c.header("chronolog-attempt-status", a.status);
      c.header("chronolog-output-check", "running");
      return stream(c, async (out) => {
        let offset = 0;
        let lastLogRead = Date.now();
        let aborted = false;
        out.onAbort(() => {
          aborted = true;
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
      }) as never;
    },
  );
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
