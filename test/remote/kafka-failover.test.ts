import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  actorPid,
  type SchedulerProc,
  startScheduler,
  stopScheduler,
  waitForShards,
} from "../scale/support.js";
import { Leftovers, tempDataDir } from "../support/cli.js";
import { kafkaForSuite } from "../support/kafka.js";
import { waitUntil } from "../support/wait.js";
import { completed, declareTasks, freePort, readLog, startWorker, streamOf, workToken } from "./support.js";

/**
 * Two `chronolog scheduler` processes share a Kafka log, each serving the API on its own
 * loopback port; one remote worker is connected to both. Tasks that are not idempotent run on
 * it, each writing its effect under a kernel lock (flock) that detects an overlap. The
 * scheduler that gave most of the running attempts is SIGKILLed: the other takes its shards,
 * asks the worker about the attempts it finds running there (or finished, their reports
 * waiting), adopts them (their tokens are current in the log), and applies their reports.
 * Every task finishes, none runs twice.
 */
const TASKS = 8;
const hasJava = (() => {
  try {
    execFileSync("java", ["-version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!hasJava && !process.env.CHRONOLOG_KAFKA_BROKERS)
  console.warn(
    "kafka-failover: skipped: no Kafka broker (set CHRONOLOG_KAFKA_BROKERS, or install Java for infra/kafka/start)",
  );

let kafka: { brokers: string; stop: () => Promise<void> } | undefined;
const procs: SchedulerProc[] = [];
const left = new Leftovers();
let dir = "";

beforeAll(async () => {
  if (hasJava || process.env.CHRONOLOG_KAFKA_BROKERS) kafka = await kafkaForSuite("remote-failover");
}, 300_000);
afterAll(async () => {
  await left.clear();
  await Promise.all(procs.map(stopScheduler));
  delete process.env.CHRONOLOG_LOG;
  if (dir) rmSync(dir, { recursive: true, force: true });
  await kafka?.stop();
}, 60_000);

async function apiOf(s: SchedulerProc, port: number): Promise<string> {
  await waitUntil(
    `${s.name}'s API to listen`,
    () => (s.lines.some((l) => l.msg === "api listening") ? true : undefined),
    60_000,
    100,
  );
  return `http://127.0.0.1:${port}`;
}

it.skipIf(!hasJava && !process.env.CHRONOLOG_KAFKA_BROKERS)(
  "SIGKILL one of two Kafka schedulers while a remote worker runs its attempts: the other adopts them; none runs twice, none is lost",
  async () => {
    dir = tempDataDir("remote-kafka");
    mkdirSync(join(dir, "effects"));
    mkdirSync(join(dir, "locks"));
    process.env.CHRONOLOG_LOG = `kafka://${kafka?.brokers}/chronolog-remote-failover-${process.pid}-${Date.now()}`;
    const [portA, portB] = [await freePort(), await freePort()];
    const a = startScheduler(join(dir, "a"), "a", ["--http", `127.0.0.1:${portA}`]);
    procs.push(a);
    await waitForShards(a, 12);
    const b = startScheduler(join(dir, "b"), "b", ["--http", `127.0.0.1:${portB}`]);
    procs.push(b);
    await Promise.all([waitForShards(a, 6), waitForShards(b, 6)]);
    const [urlA, urlB] = [await apiOf(a, portA), await apiOf(b, portB)];

    const token = workToken(join(dir, "a"), "box", ["q"]);
    const worker = startWorker(left, urlA, token, ["q"], "box", [
      "--connect",
      urlB,
      "--capacity",
      String(TASKS * 2),
    ]);
    await waitUntil(
      "the worker to register with both schedulers",
      () => ((worker.output.match(/connected to http/g) ?? []).length >= 2 ? true : undefined),
      30_000,
      100,
    );

    // Each task holds its own kernel lock while it runs (an overlap writes OVERLAP), then
    // appends its effect: one line per run. Half of them end as soon as the scheduler is killed
    // (their reports wait for a new owner to adopt them), half run on well past the takeover.
    const killed = join(dir, "killed");
    const names = Array.from({ length: TASKS }, (_, i) => `k${i}`);
    declareTasks(
      join(dir, "a"),
      names.map((name, i) => {
        const lock = join(dir, "locks", name);
        const effect = join(dir, "effects", name);
        const work = i % 2 === 0 ? `while [ ! -e ${killed} ]; do sleep 0.1; done` : "sleep 12";
        return {
          name,
          queue: "q",
          idempotent: false,
          leaseSeconds: 30,
          command: `exec 9>${lock}; flock -n 9 || echo OVERLAP >> ${effect}; echo start >> ${effect}.started; ${work}; echo ran >> ${effect}`,
        };
      }),
    );
    const started = () => names.filter((n) => existsSync(join(dir, "effects", `${n}.started`))).length;
    await waitUntil(
      "every task to start on the worker",
      () => (started() === TASKS ? true : undefined),
      60_000,
      100,
    );

    // The scheduler that gave most of the running attempts dies.
    const before = await readLog(dir);
    const intents = before.filter((e) => e.type === "DispatchIntended");
    const byA = intents.filter((e) => actorPid(e) === a.proc.pid).length;
    const byB = intents.filter((e) => actorPid(e) === b.proc.pid).length;
    const [victim, survivor] = byA >= byB ? [a, b] : [b, a];
    const killedAt = Date.now();
    victim.proc.kill("SIGKILL");
    await victim.exited;
    writeFileSync(killed, "");
    await waitForShards(survivor, 12, killedAt, 60_000);

    const events = await completed(dir, names, 90_000);
    const effects = (n: string) => {
      const f = join(dir, "effects", n);
      return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : [];
    };
    const adopted = survivor.lines.filter((l) => l.msg === "adopted running attempts of a remote worker");
    console.log(
      [
        `remote failover on Kafka: ${TASKS} tasks on one worker connected to 2 schedulers`,
        `  attempts given: a ${byA}, b ${byB}; killed ${victim.name}`,
        `  adopted by ${survivor.name}: ${adopted.reduce((n, l) => n + Number(l.adopted), 0)}`,
        `  all done ${Date.now() - killedAt} ms after the SIGKILL`,
      ].join("\n"),
    );
    expect(Math.min(byA, byB)).toBeGreaterThan(0);
    expect(adopted.length).toBeGreaterThan(0);
    for (const n of names) {
      // Ran once, whole, with no overlap; one attempt, which succeeded on the remote worker.
      expect(effects(n)).toEqual(["ran"]);
      const mine = events.filter((e) => e.streamId === streamOf(n));
      expect(mine.filter((e) => e.type === "DispatchIntended")).toHaveLength(1);
      expect(mine.filter((e) => e.type === "AttemptFailed")).toHaveLength(0);
      expect(mine.filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
      expect(mine.find((e) => e.type === "AttemptStarted")?.data).toMatchObject({ workerId: "box" });
    }
    // The dead scheduler recorded nothing: the survivor records its registration gone, from the log.
    const gone = await waitUntil(
      `${survivor.name} to record the worker's registration with ${victim.name} gone`,
      async () =>
        (await readLog(dir)).find(
          (e) =>
            e.type === "WorkerDisconnected" &&
            /^scheduler s\d+\.[0-9a-f]+ is gone$/.test((e.data as { reason: string }).reason) &&
            actorPid(e) === survivor.proc.pid,
        ),
      30_000,
      500,
    );
    expect(gone.data).toMatchObject({ worker: "box" });
    expect(worker.child.exitCode).toBeNull();
  },
  240_000,
);
