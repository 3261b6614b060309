import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, workToken } from "../remote/support.js";
import { chronolog, chronologSpawn, tempDataDir } from "../support/cli.js";
import { type LinkedNamespace, linkedNamespace, namespacesUnavailable } from "../support/netns.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";
import { declaration, findings, type SoakTask, seeded, settled, TASKS } from "./soak-support.js";
import { readLog, startUp, stopUp, type Up } from "./support.js";

/**
 * The fault soak with remote workers (soak-remote.test.ts on the embedded log,
 * soak-remote-kafka.test.ts on the Kafka log): the soak's workload (soak.test.ts), half of it on
 * a queue served by two `chronolog worker` processes, one beside the scheduler and one in a
 * network namespace of its own joined by a veth pair; the connection limit and the workflow span
 * both. Faults at random moments (seeded): a remote worker SIGKILLed (and started again), the
 * namespace's link cut for longer than the lease (the worker fences itself; the scheduler
 * retries or leaves for an operator), the scheduler SIGKILLed while remote attempts run
 * (restarted on the same port: the workers reconnect and announce them; an attempt that is not
 * idempotent waiting for its start permission gets it, or is stopped), a local worker
 * SIGKILLed. Then the soak's checks: non-idempotent twice 0, overlaps 0 and over the connection
 * limit 0 (from kernel locks the tasks take), side effects without a durable intent (and start)
 * 0, lost 0 (every idempotent task through its schedule, every run terminal or saying why).
 *
 * CHRONOLOG_SOAK_FAULTS (default 12 here, so that a file takes about two minutes in the suite;
 * 200 for the long run: `CHRONOLOG_SOAK_FAULTS=200 npx vitest run test/faults/soak-remote.test.ts`)
 * and CHRONOLOG_SOAK_SEED (default 15) set the size and the seed. Without root (no network
 * namespaces) it runs without the link cuts, saying so.
 */
const FAULTS = Number(process.env.CHRONOLOG_SOAK_FAULTS ?? 12);
const SEED = Number(process.env.CHRONOLOG_SOAK_SEED ?? 15);
const QUEUE = "remote";
const ON_REMOTE = new Set(["idem_1", "idem_3", "once_1", "once_3", "db_1", "db_3", "transform", "load"]);
const REMOTE_TASKS: SoakTask[] = TASKS.map((t) => (ON_REMOTE.has(t.name) ? { ...t, queue: QUEUE } : t));
/** A remote attempt's lease: the scheduler's restart and the workers' reconnection fit in it. */
const REMOTE_LEASE = 4;

type Kind =
  | "remote worker SIGKILL"
  | "link cut past the lease"
  | "scheduler SIGKILL"
  | "local worker SIGKILL";
const WEIGHTS: Array<[Kind, number]> = [
  ["remote worker SIGKILL", 3],
  ["link cut past the lease", 2],
  ["scheduler SIGKILL", 2],
  ["local worker SIGKILL", 1],
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (p: ChildProcess) => p.exitCode === null && p.signalCode === null;
const children = (pid: number | undefined) =>
  pid === undefined
    ? []
    : spawnSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
        .stdout.split("\n")
        .filter(Boolean);

interface RemoteWorker {
  readonly id: string;
  proc: ChildProcess;
  output: string;
}

const unavailable = namespacesUnavailable();
let net: LinkedNamespace | null = null;
let cut = false;
afterAll(() => {
  if (cut) net?.restore();
  net?.remove();
});

/**
 * A failed soak keeps its data directory (the tasks' journal, effects and locks) and writes
 * into it what it would lose: each scheduler's service log in the order they ran, each worker's
 * output, and the log's events one JSON line each (on Kafka the log is a topic), so that the
 * failure can be read event by event.
 */
async function keepForReading(dir: string, ups: Up[], workers: RemoteWorker[]): Promise<void> {
  ups.forEach((u, i) => {
    writeFileSync(join(dir, `scheduler-${i + 1}.log`), u.log);
  });
  workers.forEach((w, i) => {
    writeFileSync(join(dir, `worker-${i + 1}-${w.id}.log`), w.output);
  });
  try {
    const events = await readLog(dir);
    const json = (_: string, v: unknown) => (typeof v === "bigint" ? v.toString() : v);
    writeFileSync(join(dir, "events.jsonl"), events.map((e) => JSON.stringify(e, json)).join("\n"));
  } catch (error) {
    writeFileSync(join(dir, "events.error.txt"), String(error));
  }
  console.log(
    `the soak failed: its data directory is kept for reading: ${dir} (log ${process.env.CHRONOLOG_LOG ?? "embedded"}; the tasks ran in ${dir}-tasks)`,
  );
}

/** Where the soak runs: the embedded log, or a topic of its own on these Kafka brokers (none: skipped). */
export type SoakLog =
  | { readonly backend: "sqlite" }
  | { readonly backend: "kafka"; readonly brokers?: string };

/** Declares the soak with remote workers on `where`. */
export function remoteSoak(where: SoakLog): void {
  const backend = where.backend;
  const brokers = where.backend === "kafka" ? where.brokers : undefined;
  const skip = backend === "kafka" && !brokers;
  describe.skipIf(skip)(`the fault soak with remote workers (${backend})`, () => {
    it(
      `${FAULTS} faults among remote workers, links and the scheduler, then every guarantee holds`,
      async () => {
        if (unavailable === undefined) net = linkedNamespace("soak");
        if (brokers)
          process.env.CHRONOLOG_LOG = `kafka://${brokers}/chronolog-soak-remote-${process.pid}-${Date.now()}`;
        const host = net ? net.hostAddress : "127.0.0.1";
        const dir = tempDataDir("soak-remote");
        mkdirSync(join(dir, "effects"));
        mkdirSync(join(dir, "locks"));
        const file = join(dir, "soak.yaml");
        writeFileSync(
          file,
          declaration(dir, 0, REMOTE_TASKS, (t) => (t.queue ? REMOTE_LEASE : 2)),
        );
        const first = chronolog(dir, ["declare", file]);
        expect(first.code, first.stderr).toBe(0);
        const token = workToken(dir, "soak", [QUEUE]);
        const port = await freePort();
        const url = `http://${host}:${port}`;
        const upArgs = ["--grace", "2", "--http", `${host}:${port}`, ...(net ? ["--insecure"] : [])];

        const startWorker = (id: string, inNamespace: boolean): RemoteWorker => {
          const proc = chronologSpawn(
            dir,
            [
              "worker",
              "--connect",
              url,
              "--token",
              token,
              "--queue",
              QUEUE,
              "--id",
              id,
              "--capacity",
              "4",
              "--warm-shells",
              "0",
              "--dir",
              join(dir, "workers", id),
              ...(net ? ["--insecure"] : []),
            ],
            {},
            inNamespace && net ? net.exec : [],
          );
          const w: RemoteWorker = { id, proc, output: "" };
          everyWorker.push(w);
          const keep = (c: Buffer) => {
            w.output = (w.output + c.toString("utf8")).slice(-200_000);
          };
          proc.stdout?.on("data", keep);
          proc.stderr?.on("data", keep);
          return w;
        };
        // Every scheduler and worker the soak started, for what a failed run keeps (below).
        const everyUp: Up[] = [];
        const everyWorker: RemoteWorker[] = [];
        let passed = false;
        const exited = (p: ChildProcess) =>
          alive(p) ? new Promise<void>((r) => p.once("exit", () => r())) : Promise.resolve();

        const { random, pick } = seeded(SEED, WEIGHTS);
        const injected = new Map<Kind, number>();
        let inFlightAtKill = 0;
        let restarts = 0;
        const t0 = Date.now();
        const waitListening = (u: Up) =>
          waitUntil(
            "the scheduler's API to listen",
            () => {
              if (u.log.includes('"api listening"')) return true;
              if (!alive(u.proc)) throw new Error(`the scheduler exited:\n${u.log.slice(-5000)}`);
              return undefined;
            },
            60_000,
            50,
          );
        let up = startUp(dir, {}, upArgs);
        everyUp.push(up);
        await waitListening(up);
        const workers = [startWorker("soak-near", false), startWorker("soak-far", true)];
        const restart = async () => {
          restarts += 1;
          up = startUp(dir, {}, upArgs);
          everyUp.push(up);
          await waitListening(up);
        };
        try {
          for (let k = 0; k < FAULTS; k++) {
            await sleep(50 + random() * 350);
            if (!alive(up.proc)) await restart();
            const kind = pick();
            switch (kind) {
              case "remote worker SIGKILL": {
                const i = Math.floor(random() * workers.length);
                const w = workers[i] as RemoteWorker;
                w.proc.kill("SIGKILL");
                await exited(w.proc);
                await sleep(random() * 1000);
                workers[i] = startWorker(w.id, w.id === "soak-far");
                break;
              }
              case "link cut past the lease": {
                if (!net) {
                  k -= 1; // (no namespace here: see the note above)
                  continue;
                }
                net.cut();
                cut = true;
                await sleep(REMOTE_LEASE * 1000 + 1500 + random() * 1000);
                net.restore();
                cut = false;
                break;
              }
              case "scheduler SIGKILL": {
                // Once a remote attempt runs (a worker has a task's process), if one does within 3 s.
                const running = await waitUntil(
                  "a remote attempt to run",
                  () => (workers.some((w) => children(w.proc.pid).length > 0) ? true : undefined),
                  3000,
                  50,
                ).catch(() => false);
                if (running) inFlightAtKill += 1;
                up.proc.kill("SIGKILL");
                await up.exited;
                await restart();
                break;
              }
              case "local worker SIGKILL": {
                const pids = children(up.proc.pid).filter((pid) => {
                  try {
                    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("worker");
                  } catch {
                    return false; // (gone meanwhile)
                  }
                });
                const pid = pids[Math.floor(random() * pids.length)];
                if (!pid) {
                  k -= 1; // (no worker yet: a restart is under way)
                  continue;
                }
                signalProcess(Number(pid), "SIGKILL");
                break;
              }
            }
            injected.set(kind, (injected.get(kind) ?? 0) + 1);
          }
          const faultSeconds = (Date.now() - t0) / 1000;

          // Settle: the scheduler and both workers up until nothing moves.
          if (!alive(up.proc)) await restart();
          await waitUntil("the soak to settle", () => settled(dir, REMOTE_TASKS), 240_000, 500).catch(
            (error: Error) => {
              throw new Error(
                `${error.message}\n${chronolog(dir, ["tasks"]).stdout}\nscheduler:\n${up.log.slice(-5000)}${workers.map((w) => `\n${w.id}:\n${w.output.slice(-3000)}`).join("")}`,
              );
            },
          );
          for (const w of workers) w.proc.kill("SIGTERM");
          await Promise.all(workers.map((w) => exited(w.proc)));
          await stopUp(up);
          const settleSeconds = (Date.now() - t0) / 1000 - faultSeconds;

          const f = await findings(dir, REMOTE_TASKS);
          const events = await readLog(dir);
          const remoteStarts = events.filter(
            (e) =>
              e.type === "AttemptStarted" &&
              ["soak-near", "soak-far"].includes((e.data as { workerId: string }).workerId),
          ).length;
          const fenced = workers.reduce((n, w) => n + (w.output.match(/fenced:/g)?.length ?? 0), 0);
          const rows = [...injected].map(([k, n]) => `${k.padEnd(28)} ${String(n).padStart(6)}`);
          console.log(
            [
              "",
              `fault soak with remote workers on ${backend}, seed ${SEED}: ${FAULTS} faults in ${faultSeconds.toFixed(0)} s, settled in ${settleSeconds.toFixed(0)} s${net ? "" : ` (no link cuts: ${unavailable})`}`,
              `${"fault".padEnd(28)} ${"count".padStart(6)}`,
              ...rows,
              `attempts ${f.attempts} (started on remote workers ${remoteStarts}), side effects ${f.sideEffects}, scheduler restarts ${restarts} (${inFlightAtKill} SIGKILLs with remote attempts in flight), fencings seen in the last worker logs ${fenced}`,
              `non-idempotent twice ${f.duplicates.length}, overlapping executions ${f.overlaps.length}, over the connection limit ${f.overLimit.length}, side effects without a durable intent/start ${f.unbacked.length}, idempotent tasks behind ${f.idempotentBehind.length}, runs going without a reason ${f.silentRuns.length}; tasks halted by lost workers ${f.haltedByLostWorkers}`,
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
          expect(remoteStarts).toBeGreaterThan(0);
          expect([...injected.values()].reduce((a, b) => a + b, 0)).toBe(FAULTS);
          passed = true;
        } finally {
          if (cut) {
            net?.restore();
            cut = false;
          }
          for (const w of workers) if (alive(w.proc)) w.proc.kill("SIGKILL");
          await stopUp(up);
          if (passed) {
            rmSync(dir, { recursive: true, force: true });
            // (Where the scheduler's tasks ran: beside the data directory.)
            rmSync(`${dir}-tasks`, { recursive: true, force: true });
          } else await keepForReading(dir, everyUp, everyWorker);
          if (brokers) delete process.env.CHRONOLOG_LOG;
        }
        // (About seven seconds a fault, at most: 200 take about twenty minutes.)
      },
      Math.max(900_000, FAULTS * 12_000),
    );
  });
}
