import { type ChildProcess, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, tempDataDir } from "../support/cli.js";
import { kafkaForSuite } from "../support/kafka.js";
import { waitUntil } from "../support/wait.js";
import { effects, LATEST_HOUR, readLog, startUp, stopUp, type Up } from "./support.js";

/**
 * The fault soak: hundreds of faults at random moments (a seeded generator picks the fault and
 * the moment) into a finite workload of idempotent and non-idempotent tasks, a workflow and a
 * connection limited to two, then a settle and the checks: no side effect of a task that is not
 * idempotent twice, no two executions of one instance at once and no connection over its limit
 * (from what the tasks themselves see, through kernel locks they take, not from the recorded
 * attempts), every side effect backed by a durable intent (and start), every idempotent task
 * through its schedule, every run terminal or saying what blocks it, a declaration written
 * whole or not at all, the chain verified, no process left behind.
 *
 * CHRONOLOG_SOAK_FAULTS (default 50, so that the whole suite stays within its time on both
 * logs; 200 or more for a longer soak) and CHRONOLOG_SOAK_SEED (default 15) set the size and
 * the seed; CHRONOLOG_FAULT_BACKEND=kafka runs it on the Kafka log.
 */
const FAULTS = Number(process.env.CHRONOLOG_SOAK_FAULTS ?? 50);
const SEED = Number(process.env.CHRONOLOG_SOAK_SEED ?? 15);
const HOUR = 3_600_000;
const HOURS = 24;
const START = new Date(Date.parse(LATEST_HOUR) - (HOURS - 1) * HOUR).toISOString();
const END = new Date(Date.parse(LATEST_HOUR) + HOUR / 2).toISOString();
const backend = process.env.CHRONOLOG_FAULT_BACKEND === "kafka" ? "kafka" : "sqlite";

interface SoakTask {
  readonly name: string;
  readonly idempotent: boolean;
  readonly connection?: boolean;
  readonly sleep: number;
  readonly workflow?: { parents: string[] };
}

const TASKS: SoakTask[] = [
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

function declaration(dir: string, version: number): string {
  const line = (t: SoakTask, inWorkflow: boolean) => {
    const head = inWorkflow
      ? `      - { name: ${t.name}, parents: [${t.workflow?.parents.join(", ")}]`
      : `  - { project: p, account: a, name: ${t.name}, cron: "0 * * * *", startDate: "${START}", endDate: "${END}"`;
    return `${head}, idempotent: ${t.idempotent}, leaseSeconds: 2, config: { v: ${version} }${t.connection ? ", connection: db" : ""}, operator: { type: shell, command: ${JSON.stringify(command(dir, t))} } }`;
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
    ...TASKS.filter((t) => t.workflow).map((t) => line(t, true)),
    "tasks:",
    ...TASKS.filter((t) => !t.workflow).map((t) => line(t, false)),
    "",
  ].join("\n");
}

type Kind =
  | "scheduler SIGKILL"
  | "scheduler SIGINT stop"
  | "worker SIGKILL"
  | "worker SIGSTOP/SIGCONT"
  | "declare killed"
  | "backfill killed"
  | "second scheduler refused";
const WEIGHTS: Array<[Kind, number]> = [
  ["scheduler SIGKILL", 2],
  ["scheduler SIGINT stop", 1],
  ["worker SIGKILL", 3],
  ["worker SIGSTOP/SIGCONT", 2],
  ["declare killed", 1],
  ["backfill killed", 1],
  ["second scheduler refused", 1],
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function workersOf(up: Up): number[] {
  const r = spawnSync("pgrep", ["-P", String(up.proc.pid)], { encoding: "utf8" });
  return r.stdout
    .split("\n")
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("worker");
      } catch {
        return false; // (gone meanwhile)
      }
    });
}

async function killAt(p: ChildProcess, ms: number): Promise<number | null> {
  const exited = new Promise<number | null>((r) => p.once("exit", (code) => r(code)));
  await sleep(ms);
  if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  return exited;
}

let kafka: { brokers: string; stop: () => Promise<void> } | null = null;
afterAll(async () => {
  await kafka?.stop();
}, 60_000);

describe(`the fault soak (${backend})`, () => {
  it(`${FAULTS} faults at random moments, then every guarantee holds`, async () => {
    if (backend === "kafka") {
      kafka = await kafkaForSuite("soak");
      process.env.CHRONOLOG_LOG = `kafka://${kafka.brokers}/chronolog-soak-${process.pid}-${Date.now()}`;
    }
    const dir = tempDataDir("soak");
    mkdirSync(join(dir, "effects"));
    mkdirSync(join(dir, "locks"));
    const file = join(dir, "soak.yaml");
    writeFileSync(file, declaration(dir, 0));
    const first = chronolog(dir, ["declare", file]);
    expect(first.code, first.stderr).toBe(0);

    let seed = SEED;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = (): Kind => {
      const total = WEIGHTS.reduce((s, [, w]) => s + w, 0);
      let x = random() * total;
      for (const [k, w] of WEIGHTS) {
        x -= w;
        if (x < 0) return k;
      }
      return WEIGHTS[0]?.[0] as Kind;
    };
    const injected = new Map<Kind, number>();
    const outcomes = {
      declareWritten: 0,
      declareKilled: 0,
      backfillRefused: 0,
      refusedWith8: 0,
      restarts: 0,
    };
    let declared = 0;
    const t0 = Date.now();
    let up = startUp(dir, {}, ["--grace", "2"]);
    const isUp = () => up.log.includes('"msg":"chronolog is up"');
    const restart = () => {
      outcomes.restarts += 1;
      up = startUp(dir, {}, ["--grace", "2"]);
    };
    try {
      for (let k = 0; k < FAULTS; k++) {
        await sleep(50 + random() * 350);
        if (up.proc.exitCode !== null || up.proc.signalCode !== null) restart();
        const kind = pick();
        switch (kind) {
          case "scheduler SIGKILL":
            up.proc.kill("SIGKILL");
            await up.exited;
            restart();
            break;
          case "scheduler SIGINT stop": {
            up.proc.kill("SIGINT");
            await up.exited;
            restart();
            break;
          }
          case "worker SIGKILL": {
            const pids = workersOf(up);
            const pid = pids[Math.floor(random() * pids.length)];
            if (!pid) {
              k -= 1; // (no worker yet: a restart is under way)
              continue;
            }
            process.kill(pid, "SIGKILL");
            break;
          }
          case "worker SIGSTOP/SIGCONT": {
            const pids = workersOf(up);
            const pid = pids[Math.floor(random() * pids.length)];
            if (!pid) {
              k -= 1;
              continue;
            }
            process.kill(pid, "SIGSTOP");
            await sleep(200 + random() * 1300);
            try {
              process.kill(pid, "SIGCONT");
            } catch {}
            break;
          }
          case "declare killed": {
            declared += 1;
            writeFileSync(file, declaration(dir, declared));
            const code = await killAt(chronologSpawn(dir, ["declare", file]), random() * 1000);
            if (code === 0) outcomes.declareWritten += 1;
            else outcomes.declareKilled += 1;
            break;
          }
          case "backfill killed": {
            const t = TASKS.filter((x) => x.idempotent && !x.workflow)[Math.floor(random() * 5)] as SoakTask;
            const from = Math.floor(random() * HOURS);
            const to = Math.min(HOURS - 1, from + Math.floor(random() * 4));
            const at = (h: number) => new Date(Date.parse(START) + h * HOUR).toISOString();
            const code = await killAt(
              chronologSpawn(dir, [
                "backfill",
                `p/a/${t.name}`,
                "--from",
                at(from),
                "--to",
                at(to),
                "--detach",
              ]),
              random() * 1000,
            );
            if (code === 8) outcomes.backfillRefused += 1;
            break;
          }
          case "second scheduler refused": {
            if (!isUp() || backend === "kafka") {
              k -= 1; // (Kafka schedulers share the log on purpose: no lock to refuse a second.)
              continue;
            }
            const second = chronologSpawn(dir, ["up", "--workers", "1"]);
            second.stderr?.resume();
            second.stdout?.resume();
            const code = await new Promise<number | null>((r) => second.once("exit", (c) => r(c)));
            expect(code).toBe(8);
            outcomes.refusedWith8 += 1;
            break;
          }
        }
        injected.set(kind, (injected.get(kind) ?? 0) + 1);
      }
      const faultSeconds = (Date.now() - t0) / 1000;

      // Settle: a scheduler that stays up until nothing moves.
      if (up.proc.exitCode !== null || up.proc.signalCode !== null) restart();
      await waitUntil(
        "the soak to settle",
        async () => {
          const rows = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout || "[]") as Array<{
            condition: string;
          }>;
          const moving = rows.filter((r) =>
            ["running", "queued", "ready", "retry_wait", "succeeded", "not_due"].includes(r.condition),
          );
          return rows.length === TASKS.length && moving.length === 0 ? true : undefined;
        },
        180_000,
        500,
      );
      await stopUp(up);
      const settleSeconds = (Date.now() - t0) / 1000 - faultSeconds;

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
      for (const t of TASKS) {
        const per = new Map<string, number>();
        for (const f of effects(dir, t.name)) {
          sideEffects += 1;
          per.set(f.logicalDate, (per.get(f.logicalDate) ?? 0) + 1);
          if (!intents.has(f.token))
            unbacked.push(`${t.name} ${f.logicalDate}: token ${f.token} has no intent`);
          if (!t.idempotent && !starts.has(f.token))
            unbacked.push(`${t.name} ${f.logicalDate}: ran before its start was recorded`);
        }
        if (!t.idempotent)
          for (const [d, n] of per) if (n > 1) duplicates.push(`${t.name} ${d} ran ${n} times`);
      }
      const tasks = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout) as Array<{
        task: string;
        condition: string;
        prevIntervalStart: string | null;
        reasons: string[];
      }>;
      // An idempotent task runs again after a lost worker, within bounds: one whose workers were
      // killed that often halts, saying so; any other reason to stop short is a fault.
      const idempotentBehind = tasks.filter(
        (r) =>
          !(r.condition === "failed" && r.reasons.some((x) => x.includes("ended failed: lost: worker"))) &&
          // (A workflow's tasks wait for its halted ones: the runs say so, checked below.)
          TASKS.some((t) => `p/a/${t.name}/ALL` === r.task && t.idempotent && !t.workflow) &&
          r.prevIntervalStart !== LATEST_HOUR,
      );
      const runs = JSON.parse(chronolog(dir, ["runs", "wf", "--json"]).stdout) as Array<{
        runId: string;
        status: string;
        blockedBy: string[];
      }>;
      const silentRuns = runs.filter((r) => r.status === "running" && r.blockedBy.length === 0);
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
      const haltedByLostWorkers = tasks.filter(
        (r) => r.condition === "failed" && r.reasons.some((x) => x.includes("ended failed: lost: worker")),
      ).length;
      const leftBehind = spawnSync("pgrep", ["-f", dir], { encoding: "utf8" }).stdout.trim();
      const attempts = events.filter((e) => e.type === "DispatchIntended").length;

      const rows = [...injected].map(([k, n]) => `${k.padEnd(28)} ${String(n).padStart(6)}`);
      console.log(
        [
          "",
          `fault soak on ${backend}, seed ${SEED}: ${FAULTS} faults in ${faultSeconds.toFixed(0)} s, settled in ${settleSeconds.toFixed(0)} s`,
          `${"fault".padEnd(28)} ${"count".padStart(6)}`,
          ...rows,
          `attempts ${attempts}, side effects ${sideEffects}, scheduler restarts ${outcomes.restarts}, declares written/killed ${outcomes.declareWritten}/${outcomes.declareKilled}, backfills refused ${outcomes.backfillRefused}`,
          `non-idempotent twice ${duplicates.length}, overlapping executions ${overlaps.length}, over the connection limit ${overLimit.length}, side effects without a durable intent/start ${unbacked.length}, runs going without a reason ${silentRuns.length}; tasks halted by lost workers ${haltedByLostWorkers}`,
          "",
        ].join("\n"),
      );
      expect(duplicates).toEqual([]);
      expect(overlaps).toEqual([]);
      expect(overLimit).toEqual([]);
      expect(unbacked).toEqual([]);
      expect(idempotentBehind).toEqual([]);
      expect(silentRuns).toEqual([]);
      expect(versions.size).toBe(1);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      expect(leftBehind).toBe("");
      expect([...injected.values()].reduce((a, b) => a + b, 0)).toBe(FAULTS);
    } finally {
      await stopUp(up);
      if (kafka) delete process.env.CHRONOLOG_LOG;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
