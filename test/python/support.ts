import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LATEST_HOUR, type Proc, watch } from "../remote/support.js";
import { chronolog, type Leftovers, tempDataDir } from "../support/cli.js";

/** The Python package's sources and its tests' modules (the worker imports `tests.worker_tasks`). */
export const PACKAGE = fileURLToPath(new URL("../../clients/python", import.meta.url));

/** `python3 -m chronolog.worker` serving `queues` with `token`, in a directory of its own. */
export function startPythonWorker(
  left: Leftovers,
  url: string,
  token: string,
  queues: readonly string[],
  id: string,
  extra: readonly string[] = [],
  prefix: readonly string[] = [],
): Proc & { dir: string } {
  const dir = tempDataDir(`pyworker-${id}`);
  left.dirs.push(dir);
  const args = ["-m", "chronolog.worker", "--connect", url, "--token", token, "--id", id];
  args.push("--dir", join(dir, "w"), "--import", "tests.worker_tasks", ...extra);
  for (const q of queues) args.push("--queue", q);
  const [cmd, ...rest] = [...prefix, "python3", ...args] as [string, ...string[]];
  const child = spawn(cmd, rest, {
    cwd: PACKAGE,
    env: { ...process.env, PYTHONPATH: join(PACKAGE, "src"), PYTHONDONTWRITEBYTECODE: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const p = watch(child);
  left.processes.push(child);
  return Object.assign(p, { dir });
}

export interface PyTask {
  readonly name: string;
  readonly fn: string;
  readonly args?: Record<string, unknown>;
  readonly queue?: string;
  readonly idempotent?: boolean;
  readonly leaseSeconds?: number;
  readonly maxAttempts?: number;
  /** The operator's `timeoutMs`. */
  readonly timeoutMs?: number;
  /** More of the task's fields, as inline YAML (`connection: db, secrets: { ... }`). */
  readonly fields?: string;
}

/** Declares hourly python tasks (functions of `tests.worker_tasks`) whose one interval is LATEST_HOUR. */
export function declarePython(dir: string, tasks: readonly PyTask[], extra = ""): void {
  const end = new Date(Date.parse(LATEST_HOUR) + 1_800_000).toISOString();
  const lines = tasks.map(
    (t) =>
      `  - { project: p, account: a, name: ${t.name}, cron: "0 * * * *", startDate: "${LATEST_HOUR}", endDate: "${end}", idempotent: ${t.idempotent ?? true}, leaseSeconds: ${t.leaseSeconds ?? 30}, queue: ${t.queue ?? "py"}, retry: { maxAttempts: ${t.maxAttempts ?? 1}, initialDelayMs: 0 },${t.fields ? ` ${t.fields},` : ""} operator: { type: python, function: "tests.worker_tasks:${t.fn}", args: ${JSON.stringify(t.args ?? {})}${t.timeoutMs ? `, timeoutMs: ${t.timeoutMs}` : ""} } }`,
  );
  const file = join(dir, "tasks.yaml");
  writeFileSync(file, `${lines.length > 0 ? ["tasks:", ...lines].join("\n") : ""}\n${extra}`);
  const r = chronolog(dir, ["declare", file]);
  if (r.code !== 0) throw new Error(`declare failed (${r.code}): ${r.stderr}`);
}
