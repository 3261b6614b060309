// bench/audit: the state as of any position of a long embedded log. Builds (once, then reuses)
// a SQLite log of scheduler-shaped events (a few thousand tasks declared, then interval after
// interval of DispatchIntended, AttemptStarted, AttemptSucceeded and IntervalCompleted), writes
// the snapshot ladder over it as `chronolog rebuild` does, then measures `projectionAsOf` at
// random positions, `projectionAsOf` at the head against `loadProjection` (the read without
// --at), and `chronolog tasks --json` with and without `--at`, end to end.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { instanceStream, SchedulerProjection, taskStream } from "@chronolog/core";
import { EventLog } from "@chronolog/log";
import { SqliteBackend } from "@chronolog/log-sqlite";
import {
  catchUp,
  declare,
  ladderRungs,
  loadProjection,
  projectionAsOf,
  rebuildWithLadder,
} from "@chronolog/scheduler";
import { parse } from "yaml";
import { random } from "../scale/catalogue.mjs";
import { fmt, percentile, printTable } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const TOTAL = Number(process.env.BENCH_EVENTS ?? (quick ? 100_000 : 1_000_000));
const TASKS = Number(process.env.BENCH_TASKS ?? 3000);
const POSITIONS = Number(process.env.BENCH_POSITIONS ?? 20);
const HEAD_ROUNDS = Number(process.env.BENCH_ROUNDS ?? (quick ? 6 : 20));
const CLI_ROUNDS = Number(process.env.BENCH_CLI_ROUNDS ?? (quick ? 2 : 5));
const HOUR = 3_600_000;
const START = Date.parse("2024-01-01T00:00:00.000Z");
const BUILD_VERSION = 1;

const root = resolve(".");
const cli = join(root, "services/cli/bin/chronolog.mjs");
const dir = join(
  process.env.BENCH_DIR ?? tmpdir(),
  `chronolog-bench-audit-v${BUILD_VERSION}-${TOTAL}-events-${TASKS}-tasks`,
);
const dbPath = join(dir, "log.db");
const builtMarker = join(dir, "built");
const iso = (ms) => new Date(ms).toISOString();
const ms = (t0) => performance.now() - t0;

// ---- the log, built once ----------------------------------------------------------------------

function declaration() {
  const lines = ["tasks:"];
  for (let i = 0; i < TASKS; i++) {
    const project = `p${i % 20}`;
    // Every tenth task has the one before it as parent, across projects.
    const parent = i % 10 === 9 ? `, parents: ["p${(i - 1) % 20}/acme/t${i - 1}"]` : "";
    lines.push(
      `  - { project: ${project}, account: acme, name: t${i}, cron: "0 * * * *", startDate: "${iso(START)}", idempotent: true, operator: { type: shell, command: "echo {{ ds }} t${i}" }${parent} }`,
    );
  }
  return `${lines.join("\n")}\n`;
}

async function build() {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const backend = new SqliteBackend({ path: dbPath, synchronous: "NORMAL", watchOtherProcesses: false });
  const log = new EventLog(backend, { actor: "bench" });
  const projection = new SchedulerProjection();
  await declare(log, projection, [{ filename: "audit.yaml", document: parse(declaration()) }], START);
  await catchUp(log, projection);
  let head = await log.headPosition();
  const tasks = [...projection.tasks.values()].map((t) => ({
    key: t.key,
    stream: taskStream(t.key),
    revision: t.revision,
    logicalDate: Date.parse(t.logicalDate),
  }));
  const perBatch = 1000; // tasks, 4 events each, in one appendMany
  let n = 0;
  while (head < BigInt(TOTAL)) {
    for (let from = 0; from < tasks.length && head < BigInt(TOTAL); from += perBatch) {
      const room = Math.floor(Number(BigInt(TOTAL) - head) / 4);
      const slice = tasks.slice(from, from + Math.min(perBatch, Math.max(1, room)));
      const writes = [];
      for (const t of slice) {
        const logicalDate = iso(t.logicalDate);
        const ran = t.logicalDate + HOUR; // when the interval's run would start
        const token = `tok-${t.stream.slice(5)}-${logicalDate}`.slice(0, 128);
        const attempt = 1;
        n += 1;
        writes.push({
          streamId: instanceStream(t.key, logicalDate),
          expectedRevision: "no_stream",
          events: [
            {
              type: "DispatchIntended",
              data: {
                key: t.key,
                logicalDate,
                attempt,
                token,
                operator: {
                  type: "shell",
                  command: `echo ${logicalDate.slice(0, 10)} ${t.key.name}`,
                  env: {},
                },
                idempotent: true,
                leaseSeconds: 30,
              },
            },
            {
              type: "AttemptStarted",
              data: {
                attempt,
                token,
                workerId: `w${n % 4}`,
                pid: 10_000 + (n % 50_000),
                leaseExpiresAt: iso(ran + 30_000),
              },
            },
            {
              type: "AttemptSucceeded",
              data: {
                attempt,
                token,
                durationMs: 120 + (n % 400),
                exitCode: 0,
                output: { stdoutTail: `${logicalDate.slice(0, 10)} ${t.key.name}\n`, stderrTail: "" },
              },
            },
          ],
        });
        writes.push({
          streamId: t.stream,
          expectedRevision: t.revision,
          events: [
            {
              type: "IntervalCompleted",
              data: {
                key: t.key,
                logicalDate,
                nextLogicalDate: iso(t.logicalDate + HOUR),
                nextRunDate: iso(t.logicalDate + 2 * HOUR),
                attempt,
              },
            },
          ],
        });
      }
      const results = await log.appendMany(writes);
      for (const [i, t] of slice.entries()) {
        t.revision = results[2 * i + 1].nextExpectedRevision;
        t.logicalDate += HOUR;
      }
      head = await log.headPosition();
    }
  }
  await log.close();
  writeFileSync(builtMarker, `${head}\n`);
  return { secs: ms(t0) / 1000, head };
}

// ---- measures ---------------------------------------------------------------------------------

const openRead = () =>
  new EventLog(new SqliteBackend({ path: dbPath, readonly: true, watchOtherProcesses: false }));

function cliWall(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cli, "--data-dir", dir, ...args], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  const wall = ms(t0);
  if (r.status !== 0) throw new Error(`chronolog ${args.join(" ")} failed: ${r.stderr}`);
  return { wall, out: r.stdout };
}

let built = null;
if (!existsSync(builtMarker)) built = await build();

let t0 = performance.now();
{
  const backend = new SqliteBackend({ path: dbPath, synchronous: "NORMAL", watchOtherProcesses: false });
  const log = new EventLog(backend, { actor: "bench" });
  await rebuildWithLadder(log, dir);
  await log.close();
}
const rebuildSecs = ms(t0) / 1000;
// What the rebuild left on the heap is not the reads' to collect (a read with --at is a process
// of its own).
globalThis.gc?.();
const rungs = ladderRungs(dir);

const log = openRead();
const head = await log.headPosition();

// The state as of random positions.
const next = random(20_261_201);
const positions = Array.from({ length: POSITIONS }, () => BigInt(Math.floor(next() * Number(head + 1n))));
const asOf = [];
// This process's CPU time for each: on a machine whose cores are shared, the wall time also
// holds the time it waited for one.
const asOfCpu = [];
const replayed = [];
for (const p of positions) {
  const cpu0 = process.cpuUsage();
  t0 = performance.now();
  const r = await projectionAsOf(log, dir, p);
  asOf.push(ms(t0));
  const cpu = process.cpuUsage(cpu0);
  asOfCpu.push((cpu.user + cpu.system) / 1000);
  replayed.push(r.replayed);
  if (process.env.BENCH_VERBOSE)
    console.error(`as of ${p}: ${fmt(asOf.at(-1))} ms, CPU ${fmt(asOfCpu.at(-1))} ms, ${r.replayed} folded`);
}
asOf.sort((a, b) => a - b);
asOfCpu.sort((a, b) => a - b);
replayed.sort((a, b) => a - b);

// The head: as of it against the read without --at, alternating (and which goes first).
const atHead = [];
const without = [];
for (let i = 0; i < HEAD_ROUNDS; i++) {
  for (const asOfFirst of i % 2 === 0 ? [true, false] : [false, true]) {
    t0 = performance.now();
    if (asOfFirst) await projectionAsOf(log, dir, head);
    else await loadProjection(log, dir);
    (asOfFirst ? atHead : without).push(ms(t0));
  }
}
await log.close();
atHead.sort((a, b) => a - b);
without.sort((a, b) => a - b);

// The CLI end to end, alternating: --at the head, without --at, --at a position mid-log.
const mid = head / 2n;
const cliAt = [];
const cliWithout = [];
const cliMid = [];
for (let i = 0; i < CLI_ROUNDS; i++) {
  const b = i % 2 === 1 ? cliWall(["tasks", "--json"]) : null;
  const a = cliWall(["tasks", "--at", String(head), "--json"]);
  const b2 = b ?? cliWall(["tasks", "--json"]);
  cliMid.push(cliWall(["tasks", "--at", String(mid), "--json"]).wall);
  if (i === 0 && a.out !== b2.out) throw new Error("tasks --at the head differs from tasks");
  cliAt.push(a.wall);
  cliWithout.push(b2.wall);
}
for (const s of [cliAt, cliWithout, cliMid]) s.sort((a, b) => a - b);

const p50 = (s) => percentile(s, 50);
console.log(
  `\nbench/audit (SQLite, ${fmt(Number(head))} events, ${fmt(TASKS)} tasks, ladder of ${rungs.length} rungs${
    built ? `; log built in ${fmt(built.secs, 1)} s` : "; log reused from an earlier run"
  })\n`,
);
printTable(
  ["measure", "result", "target"],
  [
    ["rebuild with the ladder (whole log)", `${fmt(rebuildSecs, 1)} s`, "-"],
    [`state as of ${POSITIONS} random positions, p50`, `${fmt(p50(asOf))} ms`, "< 1,000 ms"],
    [`state as of ${POSITIONS} random positions, p95`, `${fmt(percentile(asOf, 95))} ms`, "< 1,000 ms"],
    [`state as of ${POSITIONS} random positions, max`, `${fmt(asOf.at(-1))} ms`, "< 1,000 ms"],
    ["  ... CPU time of each, p50 / max", `${fmt(p50(asOfCpu))} / ${fmt(asOfCpu.at(-1))} ms`, "-"],
    ["events folded past the rung, max", fmt(replayed.at(-1)), "-"],
    [`projectionAsOf(head), p50 of ${HEAD_ROUNDS}`, `${fmt(p50(atHead))} ms`, "-"],
    [`loadProjection (no --at), p50 of ${HEAD_ROUNDS}`, `${fmt(p50(without))} ms`, "-"],
    ["as of the head / without --at", `${fmt(p50(atHead) / p50(without), 2)}x`, "~1.0x"],
    [`chronolog tasks --at HEAD --json, p50 of ${CLI_ROUNDS}`, `${fmt(p50(cliAt))} ms`, "-"],
    [`chronolog tasks --json, p50 of ${CLI_ROUNDS}`, `${fmt(p50(cliWithout))} ms`, "-"],
    ["CLI --at the head / without --at", `${fmt(p50(cliAt) / p50(cliWithout), 2)}x`, "~1.0x"],
    [`chronolog tasks --at MID --json, p50 of ${CLI_ROUNDS}`, `${fmt(p50(cliMid))} ms`, "< 1,000 ms + start"],
  ],
);
