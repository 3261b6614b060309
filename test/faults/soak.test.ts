import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, tempDataDir } from "../support/cli.js";
import { kafkaForSuite } from "../support/kafka.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";
import {
  declaration,
  findings,
  HOUR,
  HOURS,
  SOAK_START,
  type SoakTask,
  seeded,
  settled,
  TASKS,
} from "./soak-support.js";
import { startUp, stopUp, type Up } from "./support.js";

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
const backend = process.env.CHRONOLOG_FAULT_BACKEND === "kafka" ? "kafka" : "sqlite";

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

    const { random, pick } = seeded(SEED, WEIGHTS);
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
            signalProcess(pid, "SIGKILL");
            break;
          }
          case "worker SIGSTOP/SIGCONT": {
            const pids = workersOf(up);
            const pid = pids[Math.floor(random() * pids.length)];
            if (!pid) {
              k -= 1;
              continue;
            }
            signalProcess(pid, "SIGSTOP");
            await sleep(200 + random() * 1300);
            try {
              signalProcess(pid, "SIGCONT");
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
            const at = (h: number) => new Date(Date.parse(SOAK_START) + h * HOUR).toISOString();
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
            // Refused: a pending backfill in the way (8), or a range past where the task stands (2).
            if (code === 8 || code === 2) outcomes.backfillRefused += 1;
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
      await waitUntil("the soak to settle", () => settled(dir), 180_000, 500);
      await stopUp(up);
      const settleSeconds = (Date.now() - t0) / 1000 - faultSeconds;

      const f = await findings(dir);
      const rows = [...injected].map(([k, n]) => `${k.padEnd(28)} ${String(n).padStart(6)}`);
      console.log(
        [
          "",
          `fault soak on ${backend}, seed ${SEED}: ${FAULTS} faults in ${faultSeconds.toFixed(0)} s, settled in ${settleSeconds.toFixed(0)} s`,
          `${"fault".padEnd(28)} ${"count".padStart(6)}`,
          ...rows,
          `attempts ${f.attempts}, side effects ${f.sideEffects}, scheduler restarts ${outcomes.restarts}, declares written/killed ${outcomes.declareWritten}/${outcomes.declareKilled}, backfills refused ${outcomes.backfillRefused}`,
          `non-idempotent twice ${f.duplicates.length}, overlapping executions ${f.overlaps.length}, over the connection limit ${f.overLimit.length}, side effects without a durable intent/start ${f.unbacked.length}, runs going without a reason ${f.silentRuns.length}; tasks halted by lost workers ${f.haltedByLostWorkers}`,
          "",
        ].join("\n"),
      );
      expect(f.duplicates).toEqual([]);
      expect(f.overlaps).toEqual([]);
      expect(f.overLimit).toEqual([]);
      expect(f.unbacked).toEqual([]);
      expect(f.idempotentBehind).toEqual([]);
      expect(f.silentRuns).toEqual([]);
      expect(f.versions).toBe(1);
      expect(f.verify.code, f.verify.out).toBe(0);
      expect(f.leftBehind).toBe("");
      expect([...injected.values()].reduce((a, b) => a + b, 0)).toBe(FAULTS);
    } finally {
      await stopUp(up);
      if (kafka) delete process.env.CHRONOLOG_LOG;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
