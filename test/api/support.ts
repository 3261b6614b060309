import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";

/** A `chronolog up` or `chronolog serve` with its HTTP API on an ephemeral loopback port. */
export interface ApiProcess {
  readonly dir: string;
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything it printed so far (stdout and stderr together). */
  output(): string;
}

export interface ApiCall {
  readonly token?: string | null;
  readonly method?: string;
  /** A string is sent as it is; anything else as JSON. */
  readonly body?: unknown;
  /** The content type (default application/json when there is a body). */
  readonly type?: string | null;
  readonly headers?: Record<string, string>;
}

export interface ApiAnswer {
  readonly status: number;
  readonly type: string;
  readonly headers: Headers;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever the body holds
  readonly body: any;
}

/** A data directory for one suite, removed with the suite's leftovers. */
export function dataDir(left: Leftovers, label: string): string {
  const dir = tempDataDir(`api-${label}`);
  left.dirs.push(dir);
  return dir;
}

/** Declares a YAML document through the CLI (exit 0 expected). */
export function declareFile(dir: string, yaml: string, name = "decl.yaml"): void {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  const r = chronolog(dir, ["declare", file]);
  if (r.code !== 0) throw new Error(`declare failed (${r.code}): ${r.stderr}`);
}

/** Issues a token through the CLI and returns its secret. */
export function createToken(dir: string, name: string, scope: string, projects: string[] = []): string {
  const r = chronolog(dir, [
    "token",
    "create",
    name,
    "--scope",
    scope,
    ...projects.flatMap((p) => ["--project", p]),
  ]);
  if (r.code !== 0) throw new Error(`token create ${name} failed (${r.code}): ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Starts `chronolog ARGS --http 127.0.0.1:0 ...` and resolves once its service log says where
 * the API listens. Both of its outputs are read all along (a pipe nobody reads stalls it).
 */
export async function startApi(
  left: Leftovers,
  dir: string,
  args: string[],
  timeoutMs = 30_000,
): Promise<ApiProcess> {
  const child = chronologSpawn(dir, [...args, "--http", "127.0.0.1:0"]);
  left.processes.push(child);
  let text = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "api listening" within ${timeoutMs} ms:\n${text}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      for (const line of text.split("\n")) {
        if (!line.includes('"api listening"')) continue;
        try {
          const { url } = JSON.parse(line) as { url?: string };
          if (url) {
            clearTimeout(timer);
            resolve(url);
          }
        } catch {
          // a line still being written
        }
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`chronolog ${args.join(" ")} exited (${code}) before it listened:\n${text}`));
    });
  });
  return { dir, url, child, output: () => text };
}

/** One request to the API; the body is parsed as JSON when it says it is JSON. */
export async function api(base: string, path: string, call: ApiCall = {}): Promise<ApiAnswer> {
  const headers: Record<string, string> = { ...(call.headers ?? {}) };
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  let body: string | undefined;
  if (call.body !== undefined) {
    body = typeof call.body === "string" ? call.body : JSON.stringify(call.body);
    if (call.type !== null) headers["content-type"] = call.type ?? "application/json";
  }
  const res = await fetch(`${base}/api/v1${path}`, {
    method: call.method ?? (call.body !== undefined ? "POST" : "GET"),
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  let parsed: unknown = text;
  if (/json/.test(type) && text !== "") parsed = JSON.parse(text);
  return { status: res.status, type, headers: res.headers, text, body: parsed };
}

/** A client of one server: `call(path, {token, method, body, type})`. */
export const client = (p: { url: string }) => (path: string, call?: ApiCall) => api(p.url, path, call);

/** A task key as a path segment. */
export const key = (task: string) => encodeURIComponent(task);

/** The log's head position, as the API says it. */
export async function headOf(p: { url: string }, token: string): Promise<string> {
  const r = await api(p.url, "/log/head", { token });
  if (r.status !== 200) throw new Error(`log/head: ${r.status} ${r.text}`);
  return r.body.position as string;
}

/**
 * The events written after `position` by callers of the API (a scheduler beside it writes its
 * own), read with `token` (one that reads every project).
 */
export async function apiWritesAfter(
  p: { url: string },
  token: string,
  position: string,
): Promise<unknown[]> {
  const r = await api(p.url, `/log?from=${BigInt(position) + 1n}&limit=1000`, { token });
  if (r.status !== 200) throw new Error(`log: ${r.status} ${r.text}`);
  return (r.body.events as Array<{ metadata: { actor: string } }>).filter((e) =>
    e.metadata.actor.startsWith("api:"),
  );
}

/** Midnight UTC `days` days from today, as an ISO instant. */
export function dayAt(days: number): string {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  return new Date(d.getTime() + days * 86_400_000).toISOString();
}

export { chronolog, Leftovers };
