import { performance } from "node:perf_hooks";
import { abortReason } from "./abort.js";
import type { HttpOperator } from "./spec.js";
import { TailBuffer } from "./tail.js";
import { errorMessage, failure, type OperatorContext, type OperatorOutcome } from "./types.js";

/**
 * One HTTP request with global fetch. Success iff the status is 2xx, or one of `expectStatus`
 * when given. The response body is streamed through a tail buffer (never held whole) and its
 * last 4 KiB become `stdoutTail`.
 */
export async function runHttp(spec: HttpOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  const signals = [ctx.signal];
  if (spec.timeoutMs !== undefined) signals.push(AbortSignal.timeout(spec.timeoutMs));
  const signal = AbortSignal.any(signals);
  const what = `${spec.method} ${spec.url}`;
  // Its URL as rendered (a template's was judged only in part when declared).
  const protocol = URL.canParse(spec.url) ? new URL(spec.url).protocol : undefined;
  if (protocol !== "http:" && protocol !== "https:")
    return failure("exception", `${what} refused: not an http or https URL`, elapsed());
  const body = new TailBuffer();
  let status: number | undefined;
  try {
    const res = await fetch(spec.url, {
      method: spec.method,
      headers: spec.headers,
      body: spec.method === "GET" || spec.method === "HEAD" ? undefined : spec.body,
      signal,
    });
    status = res.status;
    if (res.body) {
      for await (const chunk of res.body) {
        body.write(chunk);
        ctx.output?.write(chunk);
      }
    }
  } catch (err) {
    const tails = { stdoutTail: body.toString() };
    if (ctx.signal.aborted) {
      return failure("exception", `cancelled: ${abortReason(ctx.signal)}`, elapsed(), tails);
    }
    if (signal.aborted)
      return failure("timeout", `${what} timed out after ${spec.timeoutMs} ms`, elapsed(), tails);
    return failure("exception", `${what} failed: ${errorMessage(err)}`, elapsed(), tails);
  }
  const ok = spec.expectStatus ? spec.expectStatus.includes(status) : status >= 200 && status < 300;
  const stdoutTail = body.toString();
  if (!ok) return failure("http_status", `${what} returned HTTP ${status}`, elapsed(), { stdoutTail });
  return { ok: true, durationMs: elapsed(), exitCode: null, stdoutTail, stderrTail: "" };
}
