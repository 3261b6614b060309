import type { OperatorSpec } from "@chronolog/core";

export type ShellOperator = Extract<OperatorSpec, { type: "shell" }>;
export type HttpOperator = Extract<OperatorSpec, { type: "http" }>;
export type NodeOperator = Extract<OperatorSpec, { type: "node" }>;
export type PythonOperator = Extract<OperatorSpec, { type: "python" }>;
export type NoopOperator = Extract<OperatorSpec, { type: "noop" }>;

/** A rendered operator as the worker runs it: an OperatorSpec plus the worker-only `publishTo`. */
export type WorkerOperator = OperatorSpec & {
  /** On success, publish the attempt's staging directory into this directory, then report. */
  readonly publishTo?: string;
};

const str = (v: unknown, what: string): string => {
  if (typeof v !== "string" || v === "") throw new Error(`${what} must be a non-empty string`);
  return v;
};
const optStr = (v: unknown, what: string): string | undefined => (v === undefined ? undefined : str(v, what));
const optMs = (v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !(v > 0)) throw new Error("timeoutMs must be a positive number");
  return v;
};
const strRecord = (v: unknown, what: string): Record<string, string> => {
  if (v === undefined) return {};
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${what} must be an object`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) out[k] = String(x);
  return out;
};

/**
 * Reads a RunCommand's operator. The coordinator sends it already validated against the core
 * schema; this applies the same defaults and rejects what would crash a runner.
 */
export function parseOperator(raw: Record<string, unknown>): WorkerOperator {
  const publishTo = optStr(raw.publishTo, "publishTo");
  const extra = publishTo === undefined ? {} : { publishTo };
  switch (raw.type) {
    case "shell":
      return {
        type: "shell",
        command: str(raw.command, "shell command"),
        cwd: optStr(raw.cwd, "cwd"),
        env: strRecord(raw.env, "env"),
        timeoutMs: optMs(raw.timeoutMs),
        ...extra,
      };
    case "http": {
      const method = (optStr(raw.method, "method") ?? "GET").toUpperCase() as HttpOperator["method"];
      const expect = raw.expectStatus;
      if (expect !== undefined && !(Array.isArray(expect) && expect.every((s) => Number.isInteger(s)))) {
        throw new Error("expectStatus must be an array of integers");
      }
      return {
        type: "http",
        method,
        url: str(raw.url, "url"),
        headers: strRecord(raw.headers, "headers"),
        body: raw.body === undefined ? undefined : String(raw.body),
        timeoutMs: optMs(raw.timeoutMs),
        expectStatus: expect as number[] | undefined,
        ...extra,
      };
    }
    case "node": {
      const args = raw.args ?? {};
      if (typeof args !== "object" || args === null) throw new Error("node args must be an object");
      return {
        type: "node",
        module: str(raw.module, "node module"),
        export: optStr(raw.export, "export") ?? "default",
        args: args as Record<string, unknown>,
        timeoutMs: optMs(raw.timeoutMs),
        ...extra,
      };
    }
    case "python": {
      const args = raw.args ?? {};
      if (typeof args !== "object" || args === null) throw new Error("python args must be an object");
      return {
        type: "python",
        function: str(raw.function, "python function"),
        args: args as Record<string, unknown>,
        timeoutMs: optMs(raw.timeoutMs),
      };
    }
    case "noop":
      return { type: "noop", ...extra };
    case "external":
      // Never dispatched: its intervals are reported by whoever produces its data.
      throw new Error("an external task is never run: its intervals are reported, not run by a worker");
    default:
      throw new Error(`unknown operator type ${JSON.stringify(raw.type)}`);
  }
}
