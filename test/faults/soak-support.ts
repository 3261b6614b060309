import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chronolog } from "../support/cli.js";
import { effects, LATEST_HOUR, readLog } from "./support.js";

/** What the soaks (soak.test.ts, soak-remote.test.ts) share: the workload and the checks. */

export const HOUR = 3_600_000;
export const HOURS = 24;
const START = new Date(Date.parse(LATEST_HOUR) - (HOURS - 1) * HOUR).toISOString();
const END = new Date(Date.parse(LATEST_HOUR) + HOUR / 2).toISOString();

export { START as SOAK_START };

export interface SoakTask {
  readonly name: string;
  readonly idempotent: boolean;
  readonly connection?: boolean;
  readonly sleep: number;
  readonly workflow?: { parents: string[] };
  /** The queue of remote workers it runs on (none: the scheduler's own pool). */
  readonly queue?: string;
}

export const TASKS: SoakTask[] = [
  { name: "idem_1", idempotent: true, sleep: 0.3 },
  { name: "idem_2", idempotent: true, sleep: 0.5 },
  { name: "idem_3", idempotent: true, sleep: 0.2 },
  { name: "once_1", idempotent: false, sleep: 0.3 },
  { name: "once_2", idempotent: false, sleep: 0.6 },
  { name: "once_3", idempotent: false, sleep: 0.2 },
  { name: "db_1", idempotent: true, connection: true, sleep: 0.4 },
  { name: "db_2", idempotent: true, connection: true, sleep: 0.3 },
  { name: "db_3", idempotent: false, connection: true, sleep: 0.4 },
  { name: "db_4", idempotent: false, connection: true, sleep: 0.2 },
  { name: "extract", idempotent: true, sleep: 0.3, workflow: { parents: [] } },
  { name: "transform", idempotent: false, sleep: 0.3, workflow: { parents: ["extract"] } },
  { name: "load", idempotent: true, sleep: 0.2, workflow: { parents: ["transform"] } },
];

/**
 * Each task takes a kernel lock on its instance (a second execution at the same time cannot,
 * and says so), and on a connection task one of the connection's two slots; the locks go with
 * the process however it ends. Then it sleeps and appends its side effect.
 */
function command(dir: string, t: SoakTask): string {
  const journal = join(dir, "journal");
  const lock = `exec 9>>${join(dir, "locks", t.name)}@{{ logical_date }}; flock -n 9 || echo "OVERLAP ${t.name} $CHRONOLOG_LOGICAL_DATE $CHRONOLOG_TOKEN" >> ${journal}`;
  const slot = t.connection
    ? `; exec 8>>${join(dir, "locks", "db.1")}; if ! flock -n 8; then exec 8>>${join(dir, "locks", "db.2")}; flock -n 8 || echo "OVERLIMIT ${t.name} $CHRONOLOG_LOGICAL_DATE" >> ${journal}; fi`
    : "";
  return `${lock}${slot}; sleep ${t.sleep}; echo {{ logical_date }} "$CHRONOLOG_TOKEN" >> ${join(dir, "effects", t.name)}`;
}

/** The soak's declaration, `version` in every task's config; leases of `leaseSeconds(task)`. */
export function declaration(
  dir: string,
  version: number,
  tasks: readonly SoakTask[] = TASKS,
  leaseSeconds: (t: SoakTask) => number = () => 2,
): string {
  const line = (t: SoakTask, inWorkflow: boolean) => {
    const head = inWorkflow
      ? `      - { name: ${t.name}, parents: [${t.workflow?.parents.join(", ")}]`
      : `  - { project: p, account: a, name: ${t.name}, cron: "0 * * * *", startDate: "${START}", endDate: "${END}"`;
    return `${head}, idempotent: ${t.idempotent}, leaseSeconds: ${leaseSeconds(t)}, config: { v: ${version} }${t.connection ? ", connection: db" : ""}${t.queue ? `, queue: ${t.queue}` : ""}, operator: { type: shell, command: ${JSON.stringify(command(dir, t))} } }`;
  };
  return [
    "connections:",
    "  - { name: db, maxParallelism: 2 }",
    "workflows:",
    "  - name: wf",
    "    project: p",
    "    account: a",
    '    cron: "0 * * * *"',
    `    startDate: "${START}"`,
    `    endDate: "${END}"`,
    "    maxActiveRuns: 3",
    "    tasks:",
    ...tasks.filter((t) => t.workflow).map((t) => line(t, true)),
    "tasks:",
    ...tasks.filter((t) => !t.workflow).map((t) => line(t, false)),
    "",
  ].join("\n");
}

/** A seeded generator (the same faults at the same moments for a seed) and a weighted pick. */
export function seeded<K>(seed: number, weights: ReadonlyArray<readonly [K, number]>) {
  let s = seed;
  const random = () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
  const pick = (): K => {
    const total = weights.reduce((sum, [, w]) => sum + w, 0);
    let x = random() * total;
    for (const [k, w] of weights) {
      x -= w;
      if (x < 0) return k;
    }
    return weights[0]?.[0] as K;
  };
  return { random, pick };
}

/** A row of `chronolog tasks --json`, as far as the soaks read it. */
interface TaskRow {
  readonly task: string;
  readonly condition: string;
  readonly prevIntervalStart: string | null;
  readonly reasons: string[];
  readonly decision?: {
    readonly instance?: {
      readonly logicalDate: string;
      readonly idempotent: boolean;
      readonly attempts: ReadonlyArray<{ status: string }>;
    };
  };
}

/**
 * A task that is not idempotent whose attempt's lease ran out with no worker knowing it (a
 * remote worker killed, or its outcome lost with a killed scheduler that had taken it): it is
 * never run again on its own, and waits for an operator, saying so. Its worker coming back with
 * it resumes it (its heartbeat), so it counts as halted only once the soak has settled.
 */
const waitsForOperator = (r: TaskRow) =>
  r.condition === "running" &&
  r.decision?.instance?.idempotent === false &&
  r.decision.instance.attempts.at(-1)?.status === "lease_expired";

/** Waits until the scheduler of `dir` moves nothing more: every task done or saying why not. */
export function settled(dir: string, tasks: readonly SoakTask[] = TASKS): true | undefined {
  const rows = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout || "[]") as TaskRow[];
  const moving = rows.filter(
    (r) =>
      ["running", "queued", "ready", "retry_wait", "succeeded", "not_due"].includes(r.condition) &&
      !waitsForOperator(r),
  );
  return rows.length === tasks.length && moving.length === 0 ? true : undefined;
}

/** What the soak finds once settled and stopped: every list should be empty. */
export interface Findings {
  readonly duplicates: string[];
  readonly overlaps: string[];
  readonly overLimit: string[];
  readonly unbacked: string[];
  readonly idempotentBehind: unknown[];
  readonly silentRuns: unknown[];
  readonly versions: number;
  readonly verify: { code: number | null; out: string };
  readonly haltedByLostWorkers: number;
  readonly leftBehind: string;
  readonly attempts: number;
  readonly sideEffects: number;
}

export async function findings(dir: string, tasks: readonly SoakTask[] = TASKS): Promise<Findings> {
  // What the tasks saw.
  const journal = existsSync(join(dir, "journal")) ? readFileSync(join(dir, "journal"), "utf8") : "";
  const overlaps = journal.split("\n").filter((l) => l.startsWith("OVERLAP"));
  const overLimit = journal.split("\n").filter((l) => l.startsWith("OVERLIMIT"));
  // What the log says.
  const events = await readLog(dir);
  const intents = new Set<string>();
  const starts = new Set<string>();
  for (const e of events) {
    if (e.type === "DispatchIntended") intents.add((e.data as { token: string }).token);
    if (e.type === "AttemptStarted") starts.add((e.data as { token: string }).token);
  }
  const duplicates: string[] = [];
  const unbacked: string[] = [];
  let sideEffects = 0;
  for (const t of tasks) {
    const per = new Map<string, number>();
    for (const f of effects(dir, t.name)) {
      sideEffects += 1;
      per.set(f.logicalDate, (per.get(f.logicalDate) ?? 0) + 1);
      if (!intents.has(f.token)) unbacked.push(`${t.name} ${f.logicalDate}: token ${f.token} has no intent`);
      if (!t.idempotent && !starts.has(f.token))
        unbacked.push(`${t.name} ${f.logicalDate}: ran before its start was recorded`);
    }
    if (!t.idempotent) for (const [d, n] of per) if (n > 1) duplicates.push(`${t.name} ${d} ran ${n} times`);
  }
  const rows = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout) as TaskRow[];
  const lostWorker = (r: TaskRow) =>
    (r.condition === "failed" && r.reasons.some((x) => /ended failed: (lost|interrupted): worker/.test(x))) ||
    waitsForOperator(r);
  // An idempotent task runs again after a lost worker, within bounds: one whose workers were
  // killed that often halts, saying so; any other reason to stop short is a fault.
  const idempotentBehind = rows.filter(
    (r) =>
      !lostWorker(r) &&
      // (A workflow's tasks wait for its halted ones: the runs say so, checked below.)
      tasks.some((t) => `p/a/${t.name}/ALL` === r.task && t.idempotent && !t.workflow) &&
      r.prevIntervalStart !== LATEST_HOUR,
  );
  const runs = JSON.parse(chronolog(dir, ["runs", "wf", "--json"]).stdout) as Array<{
    runId: string;
    logicalDate: string;
    status: string;
    blockedBy: string[];
  }>;
  // A task of the workflow waiting for an operator holds its run, and the later ones behind its
  // interval (their summaries do not name it; the task says why).
  const halted = rows
    .filter((r) => waitsForOperator(r) && tasks.some((t) => `p/a/${t.name}/ALL` === r.task && t.workflow))
    .map((r) => r.decision?.instance?.logicalDate ?? "")
    .sort();
  const heldFrom = halted[0];
  const silentRuns = runs.filter(
    (r) =>
      r.status === "running" &&
      r.blockedBy.length === 0 &&
      !(heldFrom !== undefined && r.logicalDate >= heldFrom),
  );
  const versions = new Set(
    events
      .filter((e) => e.type === "TaskDeclared" || e.type === "TaskDeclarationChanged")
      .reduce((last, e) => {
        const spec = (e.data as { spec: { key: { name: string }; config: { v: number } } }).spec;
        last.set(spec.key.name, spec.config.v);
        return last;
      }, new Map<string, number>())
      .values(),
  );
  const verify = chronolog(dir, ["log", "verify"]);
  return {
    duplicates,
    overlaps,
    overLimit,
    unbacked,
    idempotentBehind,
    silentRuns,
    versions: versions.size,
    verify: { code: verify.code, out: verify.stdout + verify.stderr },
    haltedByLostWorkers: rows.filter(lostWorker).length,
    leftBehind: spawnSync("pgrep", ["-f", dir], { encoding: "utf8" }).stdout.trim(),
    attempts: events.filter((e) => e.type === "DispatchIntended").length,
    sideEffects,
  };
}
