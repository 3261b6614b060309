import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { RecordedEvent } from "@chronolog/log";
import { LATEST_HOUR, readLog } from "../faults/support.js";
import { chronolog, chronologSpawn, type Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

export { LATEST_HOUR, readLog };

/** A scheduler (`chronolog up`) with its API on a loopback port, or a worker, and what it printed. */
export interface Proc {
  readonly child: ChildProcess;
  output: string;
  readonly exited: Promise<number | null>;
}

/** A child process with its stdout and stderr gathered, and its exit awaited. */
export function watch(child: ChildProcess): Proc {
  const p: Proc = {
    child,
    output: "",
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
  };
  const add = (c: Buffer) => {
    p.output += c.toString("utf8");
  };
  child.stdout?.on("data", add);
  child.stderr?.on("data", add);
  return p;
}

/** A free loopback port (for a scheduler restarted on the same one). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `chronolog up` on `dir` with its API at `host`:`port` (plain http: --insecure off loopback), once it listens. */
export async function startScheduler(
  left: Leftovers,
  dir: string,
  port: number,
  host = "127.0.0.1",
  extra: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<Proc & { url: string }> {
  const insecure = host === "127.0.0.1" ? [...extra] : ["--insecure", ...extra];
  const p = watch(
    chronologSpawn(
      dir,
      ["up", "--workers", "1", "--reconcile-ms", "200", "--http", `${host}:${port}`, ...insecure],
      env,
    ),
  );
  left.processes.push(p.child);
  await waitUntil(
    "the scheduler's API to listen",
    () => (p.output.includes('"api listening"') ? true : p.child.exitCode !== null ? fail(p) : undefined),
    30_000,
    100,
  );
  const scheme = extra.includes("--tls-cert") ? "https" : "http";
  return Object.assign(p, { url: `${scheme}://${host}:${port}` });
}

function fail(p: Proc): never {
  throw new Error(`the process exited (${p.child.exitCode}):\n${p.output}`);
}

/** `chronolog worker` serving `queues` with `token`, in a directory of its own. */
export function startWorker(
  left: Leftovers,
  url: string,
  token: string,
  queues: readonly string[],
  id: string,
  extra: readonly string[] = [],
  prefix: readonly string[] = [],
): Proc & { dir: string } {
  const dir = tempDataDir(`worker-${id}`);
  left.dirs.push(dir, `${join(dir, "w")}-tasks`);
  const args = ["worker", "--connect", url, "--token", token, "--id", id, "--dir", join(dir, "w"), ...extra];
  for (const q of queues) args.push("--queue", q);
  const p = watch(chronologSpawn(dir, args, {}, prefix));
  left.processes.push(p.child);
  return Object.assign(p, { dir });
}

/** Issues a work token for `queues` and returns its secret. */
export function workToken(dir: string, name: string, queues: readonly string[]): string {
  const r = chronolog(dir, [
    "token",
    "create",
    name,
    "--scope",
    "work",
    ...queues.flatMap((q) => ["--queue", q]),
  ]);
  if (r.code !== 0) throw new Error(`token create ${name} failed (${r.code}): ${r.stderr}`);
  return r.stdout.trim();
}

export interface TaskDef {
  readonly name: string;
  readonly command: string;
  readonly queue?: string;
  readonly idempotent?: boolean;
  readonly leaseSeconds?: number;
}

/** Declares hourly tasks whose one interval is LATEST_HOUR. */
export function declareTasks(dir: string, tasks: readonly TaskDef[]): void {
  const end = new Date(Date.parse(LATEST_HOUR) + 1_800_000).toISOString();
  const lines = tasks.map(
    (t) =>
      `  - { project: p, account: a, name: ${t.name}, cron: "0 * * * *", startDate: "${LATEST_HOUR}", endDate: "${end}", idempotent: ${t.idempotent ?? true}, leaseSeconds: ${t.leaseSeconds ?? 30}${t.queue ? `, queue: ${t.queue}` : ""}, operator: { type: shell, command: ${JSON.stringify(t.command)} } }`,
  );
  const file = join(dir, "tasks.yaml");
  writeFileSync(file, ["tasks:", ...lines].join("\n"));
  const r = chronolog(dir, ["declare", file]);
  if (r.code !== 0) throw new Error(`declare failed (${r.code}): ${r.stderr}`);
}

export const streamOf = (name: string) => `instance-p/a/${name}/ALL@${LATEST_HOUR}`;

/** The events of one task's interval. */
export const of = (events: readonly RecordedEvent[], name: string) =>
  events.filter((e) => e.streamId === streamOf(name));

/** Waits until every named task has completed its interval (read from the log). */
export async function completed(
  dir: string,
  names: readonly string[],
  timeoutMs = 90_000,
): Promise<RecordedEvent[]> {
  return waitUntil(
    `${names.join(", ")} to complete`,
    async () => {
      const events = await readLog(dir);
      const done = names.every((n) =>
        events.some((e) => e.type === "IntervalCompleted" && e.streamId === `task-p/a/${n}/ALL`),
      );
      return done ? events : undefined;
    },
    timeoutMs,
    250,
  );
}
