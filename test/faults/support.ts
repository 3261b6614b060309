import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { foldInstance, type InstanceState, isTerminal } from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import { openEventStoreLog, parseEventStoreUrl } from "@chronolog/log-eventstore";
import { openKafkaLog } from "@chronolog/log-kafka";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { chronolog, chronologSpawn } from "../support/cli.js";

export const DAY = 86_400_000;
const HOUR = 3_600_000;

export interface FaultTask {
  readonly name: string;
  readonly idempotent: boolean;
  /** Shell run before the side effect. */
  readonly before?: string;
  readonly cron?: string;
  readonly start?: string;
  readonly catchup?: boolean;
  readonly env?: Record<string, string>;
  readonly parents?: string[];
}

/**
 * The latest hourly slot whose interval has ended, when the suite loaded. Tasks end there
 * (`endDate`), so an hour that turns while the suite runs does not start another interval.
 */
export const LATEST_HOUR = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
/** Half an hour past it: the schedule's last interval is LATEST_HOUR. */
const END_DATE = new Date(Date.parse(LATEST_HOUR) + HOUR / 2).toISOString();

/**
 * Each task appends `<logical date> <token>` to `<dir>/effects/<name>`: the side effect whose
 * count the suite checks (at most once for tasks that are not idempotent).
 */
export function declareTasks(dir: string, tasks: readonly FaultTask[]): void {
  const lines = tasks.map((t) => {
    const cron = t.cron ?? "0 * * * *";
    const start = t.start ?? LATEST_HOUR;
    const effect = `echo {{ logical_date }} "$CHRONOLOG_TOKEN" >> ${join(dir, "effects", t.name)}`;
    const command = t.before ? `${t.before}; ${effect}` : effect;
    const env = t.env ? `, env: ${JSON.stringify(t.env)}` : "";
    const parents = (t.parents ?? []).map((p) => `"p/a/${p}"`).join(", ");
    return `  - { project: p, account: a, name: ${t.name}, cron: "${cron}", startDate: "${start}", endDate: "${END_DATE}", catchup: ${t.catchup ?? true}, idempotent: ${t.idempotent}, leaseSeconds: 2, retry: { maxAttempts: 1 }, parents: [${parents}], operator: { type: shell, command: ${JSON.stringify(command)}${env} } }`;
  });
  chronolog(dir, ["log", "append", "note-setup", "-t", "Note", "-d", '{"text":"setup"}']);
  const file = join(dir, "tasks.yaml");
  writeFileSync(file, `tasks:\n${lines.join("\n")}\n`);
  const r = chronolog(dir, ["declare", file]);
  if (r.code !== 0) throw new Error(`declare failed: ${r.stderr}`);
  chronolog(dir, ["log", "append", "note-setup", "-t", "Note", "-d", '{"text":"declared"}']);
}

export function effects(dir: string, name: string): Array<{ logicalDate: string; token: string }> {
  const f = join(dir, "effects", name);
  if (!existsSync(f)) return [];
  return readFileSync(f, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [logicalDate, token] = l.split(" ");
      return { logicalDate: logicalDate as string, token: token as string };
    });
}

export interface Up {
  readonly proc: ChildProcess;
  log: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startUp(dir: string, env: Record<string, string> = {}, args: string[] = []): Up {
  // On Kafka, a short group session: a killed scheduler leaves the group in 1.5 s, not 6.
  const kafka = (process.env.CHRONOLOG_LOG ?? "").startsWith("kafka://")
    ? ["--session-timeout-ms", "1500"]
    : [];
  const proc = chronologSpawn(dir, ["up", "--workers", "2", "--reconcile-ms", "200", ...kafka, ...args], env);
  const up: Up = {
    proc,
    log: "",
    exited: new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal }))),
  };
  proc.stderr?.on("data", (c: Buffer) => {
    up.log += c.toString();
  });
  return up;
}

export async function stopUp(up: Up): Promise<void> {
  if (up.proc.exitCode === null && up.proc.signalCode === null) up.proc.kill("SIGTERM");
  await up.exited;
}

/** Reads the whole log file (the test's own read-only view). */
export async function readLog(dir: string): Promise<RecordedEvent[]> {
  const kafka = /^kafka:\/\/([^/]+)\/(.+)$/.exec(process.env.CHRONOLOG_LOG ?? "");
  const esdb = parseEventStoreUrl(process.env.CHRONOLOG_LOG ?? "");
  const log = esdb
    ? await openEventStoreLog({ ...esdb, actor: "test:reader" })
    : kafka
      ? await openKafkaLog({
          brokers: kafka[1] as string,
          topic: kafka[2] as string,
          actor: "test:reader",
          createTopic: false,
        })
      : openSqliteLog({ path: join(dir, "log.db"), readonly: true, watchOtherProcesses: false });
  try {
    const out: RecordedEvent[] = [];
    let from = 0n;
    for (;;) {
      const page = await log.readAll({ fromPosition: from, maxCount: 5000 });
      if (page.length === 0) return out;
      out.push(...page);
      from = (page.at(-1) as RecordedEvent).position + 1n;
    }
  } finally {
    await log.close();
  }
}

export function instances(events: readonly RecordedEvent[]): Map<string, InstanceState> {
  const byStream = new Map<string, RecordedEvent[]>();
  for (const e of events) {
    if (!e.streamId.startsWith("instance-")) continue;
    let list = byStream.get(e.streamId);
    if (!list) {
      list = [];
      byStream.set(e.streamId, list);
    }
    list.push(e);
  }
  const out = new Map<string, InstanceState>();
  for (const [stream, list] of byStream) {
    const state = foldInstance(list);
    if (state) out.set(stream, state);
  }
  return out;
}

export interface Invariants {
  readonly instances: number;
  readonly stuck: string[];
  readonly duplicates: string[];
  readonly missing: string[];
  readonly lostEvents: string[];
}

/**
 * After a fault: every instance terminal; each non-idempotent task's side effect at most once
 * per interval; each idempotent task's at least once for every interval that succeeded; every
 * side effect traceable to a durable intent (and, for gated tasks, a durable start).
 */
export async function checkInvariants(dir: string, tasks: readonly FaultTask[]): Promise<Invariants> {
  const events = await readLog(dir);
  const insts = instances(events);
  const stuck = [...insts.values()].filter((i) => !isTerminal(i)).map((i) => `${i.stream} is ${i.status}`);
  const intents = new Map<string, RecordedEvent>();
  const starts = new Set<string>();
  for (const e of events) {
    if (e.type === "DispatchIntended") intents.set(e.data.token, e);
    if (e.type === "AttemptStarted") starts.add(e.data.token);
  }
  const duplicates: string[] = [];
  const missing: string[] = [];
  const lostEvents: string[] = [];
  for (const t of tasks) {
    const fx = effects(dir, t.name);
    const perDate = new Map<string, number>();
    for (const f of fx) {
      perDate.set(f.logicalDate, (perDate.get(f.logicalDate) ?? 0) + 1);
      if (!intents.has(f.token))
        lostEvents.push(`${t.name} ran token ${f.token} with no DispatchIntended in the log`);
      if (!t.idempotent && !starts.has(f.token))
        lostEvents.push(`${t.name} ran token ${f.token} before its start was recorded`);
    }
    if (!t.idempotent)
      for (const [d, n] of perDate) if (n > 1) duplicates.push(`${t.name} ${d} ran ${n} times`);
    for (const i of insts.values()) {
      if (i.key.name !== t.name || i.status !== "success") continue;
      if (!perDate.has(i.logicalDate))
        missing.push(`${t.name} ${i.logicalDate} succeeded with no side effect`);
    }
  }
  return { instances: insts.size, stuck, duplicates, missing, lostEvents };
}

export function tasksJson(
  dir: string,
): Array<{ task: string; prevIntervalStart: string | null; condition: string }> {
  return JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout);
}

/** The summary rows the suite prints at the end. */
export const summary: Array<{
  fault: string;
  injected: number;
  duplicates: number;
  stuck: number;
  lost: number;
}> = [];
