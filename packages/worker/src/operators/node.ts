import { isAbsolute, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { abortReason, whenAborted } from "./abort.js";
import type { NodeOperator } from "./spec.js";
import { tailOf } from "./tail.js";
import { errorMessage, failure, type OperatorContext, type OperatorOutcome } from "./types.js";

/** The second argument a node task's function receives. */
export interface NodeTaskContext {
  readonly logicalDate: string;
  readonly attempt: number;
  readonly token: string;
  readonly taskKey: string;
  readonly stagingDir: string | undefined;
  /** The pid of the worker process the function runs in. */
  readonly workerPid: number;
  /** Aborted on cancel, timeout or worker shutdown: a long task should watch it. */
  readonly signal: AbortSignal;
  /** Writes a line to the attempt's output (what `chronolog logs` prints). */
  log(text: string): void;
}

/** `module` as an import specifier: a `file:` URL as is, a path resolved against the cwd. */
export function moduleUrl(module: string): string {
  if (module.startsWith("file:")) return module;
  return pathToFileURL(isAbsolute(module) ? module : resolve(process.cwd(), module)).href;
}

/**
 * Imports the module and calls the named export with `(args, context)` in the worker process.
 * A resolved value is success (its JSON, tail-truncated, as `stdoutTail`); a throw is a failure
 * of kind `exception`. A timeout or cancel aborts `context.signal` and settles the attempt at
 * once; a function that ignores the signal keeps running in the background, since in-process
 * code cannot be killed (run such code as a shell task).
 */
export async function runNode(spec: NodeOperator, ctx: OperatorContext): Promise<OperatorOutcome> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  const timeout = new AbortController();
  const timer =
    spec.timeoutMs === undefined
      ? undefined
      : setTimeout(() => timeout.abort(new Error(`timed out after ${spec.timeoutMs} ms`)), spec.timeoutMs);
  const signal = AbortSignal.any([ctx.signal, timeout.signal]);
  const aborted = whenAborted(signal);
  try {
    const mod = (await Promise.race([import(moduleUrl(spec.module)), aborted.promise])) as Record<
      string,
      unknown
    >;
    const fn = mod[spec.export];
    if (typeof fn !== "function") {
      return failure(
        "exception",
        `${spec.module} has no exported function ${JSON.stringify(spec.export)}`,
        elapsed(),
      );
    }
    const context: NodeTaskContext = {
      logicalDate: ctx.logicalDate,
      attempt: ctx.attempt,
      token: ctx.token,
      taskKey: ctx.taskKey,
      stagingDir: ctx.stagingDir,
      workerPid: process.pid,
      signal,
      log: (text) => ctx.output?.write(text.endsWith("\n") ? text : `${text}\n`),
    };
    const value: unknown = await Promise.race([
      Promise.resolve().then(() => fn(spec.args, context)),
      aborted.promise,
    ]);
    const json = value === undefined ? "" : (JSON.stringify(value) ?? "");
    if (json !== "") ctx.output?.write(`${json}\n`);
    return { ok: true, durationMs: elapsed(), exitCode: null, stdoutTail: tailOf(json), stderrTail: "" };
  } catch (err) {
    if (ctx.signal.aborted) return failure("exception", `cancelled: ${abortReason(ctx.signal)}`, elapsed());
    if (timeout.signal.aborted) return failure("timeout", `timed out after ${spec.timeoutMs} ms`, elapsed());
    const stack = err instanceof Error && err.stack ? tailOf(err.stack) : "";
    ctx.output?.write(`${err instanceof Error && err.stack ? err.stack : errorMessage(err)}\n`);
    return failure("exception", errorMessage(err), elapsed(), { stderrTail: stack });
  } finally {
    if (timer) clearTimeout(timer);
    aborted.dispose();
  }
}
