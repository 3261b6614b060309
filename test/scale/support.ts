import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { RecordedEvent } from "@chronolog/log";
import { chronolog, chronologSpawn } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

export const DAY = 86_400_000;

/** A `chronolog scheduler` process and its structured log lines (stderr, JSON). */
export interface SchedulerProc {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly lines: Array<Record<string, unknown>>;
  readonly exited: Promise<void>;
}

/** Starts a scheduler; through `prefix` when given (e.g. `ip netns exec NS`). */
export function startScheduler(
  dataDir: string,
  name: string,
  args: string[] = [],
  prefix: readonly string[] = [],
): SchedulerProc {
  mkdirSync(dataDir, { recursive: true });
  const proc = chronologSpawn(
    dataDir,
    ["scheduler", "--workers", "2", "--reconcile-ms", "200", ...args],
    {},
    prefix,
  );
  const s: SchedulerProc = {
    name,
    proc,
    lines: [],
    exited: new Promise((resolve) => proc.once("exit", () => resolve())),
  };
  if (proc.stderr)
    createInterface({ input: proc.stderr }).on("line", (l) => {
      try {
        s.lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        s.lines.push({ msg: l });
      }
    });
  return s;
}

/** The shards a scheduler holds, as it last logged them (undefined before it joined). */
export function heldShards(s: SchedulerProc, since = 0): number[] | undefined {
  const last = s.lines.filter((l) => l.msg === "shards assigned" && Number(l.time) >= since).at(-1);
  return last ? (last.shards as number[]) : undefined;
}

export async function waitForShards(s: SchedulerProc, count: number, since = 0, timeoutMs = 60_000) {
  return waitUntil(
    `${s.name} to hold ${count} shards`,
    () => {
      const line = s.lines.find(
        (l) =>
          l.msg === "shards assigned" && Number(l.time) >= since && (l.shards as number[]).length === count,
      );
      return line ? Number(line.time) : undefined;
    },
    timeoutMs,
    50,
  );
}

export async function stopScheduler(s: SchedulerProc): Promise<void> {
  if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGTERM");
  await s.exited;
}

/** The pid in an event's actor (`role:user@host:pid`). */
export function actorPid(e: RecordedEvent): number {
  return Number(e.metadata.actor.split(":").at(-1));
}

/** Declares `tasks` (YAML lines under `tasks:`) and connections through the CLI. */
export function declareYaml(dir: string, yaml: string): void {
  const file = join(dir, `declare-${Date.now()}.yaml`);
  writeFileSync(file, yaml);
  const r = chronolog(dir, ["declare", file]);
  if (r.code !== 0) throw new Error(`declare failed: ${r.stderr}`);
}

/** The most slots held at once on a connection, replaying intents and attempt ends in log order. */
export function maxSlotsHeld(events: readonly RecordedEvent[]): number {
  const holding = new Set<string>();
  let max = 0;
  for (const e of events) {
    if (!e.streamId.startsWith("instance-")) continue;
    if (e.type === "DispatchIntended") holding.add(e.streamId);
    else if (
      e.type === "AttemptSucceeded" ||
      e.type === "AttemptFailed" ||
      e.type === "AttemptAbandoned" ||
      e.type === "AttemptCancelled"
    )
      holding.delete(e.streamId);
    max = Math.max(max, holding.size);
  }
  return max;
}
