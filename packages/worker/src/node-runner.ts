/**
 * The process a node task runs in: the worker forks it for one attempt (as the task's user, in
 * the task's environment), sends it the task over the IPC channel, and this imports the module,
 * calls the export with `(args, context)` and sends back the value's JSON or the error. The
 * channel is this process's own, to its worker alone, and says nothing but this one attempt's
 * outcome: the task cannot reach the worker's channel to the scheduler. `process.send` is
 * taken away before the task's code is loaded.
 */

/** Worker to runner. */
export type RunnerCommand =
  | {
      readonly kind: "run";
      /** The module as an import specifier (a `file:` URL). */
      readonly url: string;
      /** The module as the operator names it, for messages. */
      readonly module: string;
      readonly export: string;
      readonly args: unknown;
      readonly context: {
        readonly logicalDate: string;
        readonly attempt: number;
        readonly token: string;
        readonly taskKey: string;
        readonly stagingDir: string | undefined;
        readonly workerPid: number;
      };
    }
  | { readonly kind: "abort"; readonly reason: string };

/** Runner to worker. */
export type RunnerReport =
  | { readonly kind: "log"; readonly text: string }
  | { readonly kind: "returned"; readonly json: string }
  | { readonly kind: "threw"; readonly message: string; readonly stack?: string };

type Send = (msg: RunnerReport, cb?: () => void) => void;

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}

function start(): void {
  const channel = process.send?.bind(process) as
    | ((msg: unknown, handle: undefined, options: undefined, cb: () => void) => boolean)
    | undefined;
  if (!channel) return;
  const send: Send = (msg, cb) => {
    if (!process.connected) return cb?.();
    channel(msg, undefined, undefined, () => cb?.());
  };
  // The task's code gets no way to talk to the worker.
  process.send = undefined;
  const abort = new AbortController();
  let started = false;
  let ended = false;
  const end = (msg: RunnerReport): void => {
    if (ended) return;
    ended = true;
    send(msg, () => process.exit(0));
  };
  process.on("disconnect", () => process.exit(0));
  process.on("uncaughtException", (err) =>
    end({
      kind: "threw",
      message: errorMessage(err),
      ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
    }),
  );
  process.on("unhandledRejection", (err) => console.error("chronolog node task: unhandled rejection", err));
  process.on("message", (msg: RunnerCommand) => {
    if (msg?.kind === "abort") {
      abort.abort(new Error(msg.reason));
      return;
    }
    if (msg?.kind !== "run" || started) return;
    started = true;
    void run(msg, abort.signal, send).then(end);
  });
}

async function run(
  cmd: Extract<RunnerCommand, { kind: "run" }>,
  signal: AbortSignal,
  send: Send,
): Promise<RunnerReport> {
  try {
    const mod = (await import(cmd.url)) as Record<string, unknown>;
    const fn = mod[cmd.export];
    if (typeof fn !== "function")
      return {
        kind: "threw",
        message: `${cmd.module} has no exported function ${JSON.stringify(cmd.export)}`,
      };
    const context = {
      ...cmd.context,
      signal,
      log: (text: string) => send({ kind: "log", text: String(text) }),
    };
    const value: unknown = await fn(cmd.args, context);
    return { kind: "returned", json: value === undefined ? "" : (JSON.stringify(value) ?? "") };
  } catch (err) {
    return {
      kind: "threw",
      message: errorMessage(err),
      ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
    };
  }
}

start();
