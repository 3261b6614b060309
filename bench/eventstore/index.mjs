// bench/eventstore: the EventStoreDB log on the stand-in server (a process of its own, over
// loopback gRPC) beside the embedded SQLite log, the same workloads in the same run.
//
//   node bench/eventstore/index.mjs          (BENCH_EVENTSTORE_URL=esdb://... for a real server)
//
// The stand-in keeps everything in memory and has no disk, replication or size limits: its
// figures are the client's and the mapping's cost (serialisation, round trips, conflicts), not
// a real server's. Compare them with SQLite's in the same run only.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { EventLog } from "@chronolog/log";
import { EventStoreBackend } from "@chronolog/log-eventstore";
import { SqliteBackend } from "@chronolog/log-sqlite";
import { fmt, percentile, printTable } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const BATCHED = quick ? 5_000 : 20_000;
const SINGLES_EACH = quick ? 20 : 50;
const LATENCY_N = quick ? 300 : 1000;
const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-esdb-"));
const payload = "x".repeat(120);
const note = (i) => ({ type: "Note", data: { text: payload, i } });
const run = Date.now().toString(36);
let streams = 0;
const nextStream = () => `chronolog-bench-${run}-${++streams}`;

// ---- the server ------------------------------------------------------------------------------
let url = process.env.BENCH_EVENTSTORE_URL;
let server = null;
if (!url) {
  const script = fileURLToPath(
    new URL("../../packages/log-eventstore/scripts/stand-in.mjs", import.meta.url),
  );
  server = spawn(process.execPath, [script], { stdio: ["pipe", "pipe", "inherit"] });
  url = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (c) => {
      out += c.toString();
      if (out.includes("\n")) resolve(out.split("\n")[0]);
    });
    server.once("exit", (code) => reject(new Error(`the stand-in exited (${code})`)));
  });
}
const where = server ? "stand-in server, own process, loopback" : `server at ${url}`;

const engines = {
  sqlite: async (label) => new SqliteBackend({ path: join(dir, `${label}.db`), watchOtherProcesses: false }),
  eventstore: async () => EventStoreBackend.open({ connectionString: url, stream: nextStream() }),
};

// ---- batched: 10 events per append, 100 appends at once ----------------------------------------
async function batched(engine) {
  const backend = await engines[engine]("batched");
  const log = new EventLog(backend, { actor: "bench" });
  const revisions = new Array(100).fill("no_stream");
  const start = performance.now();
  let written = 0;
  while (written < BATCHED) {
    await Promise.all(
      revisions.map((rev, s) =>
        log
          .append(
            `bench-s${s}`,
            Array.from({ length: 10 }, (_, j) => note(written + s * 10 + j)),
            { expectedRevision: rev },
          )
          .then((r) => {
            revisions[s] = r.nextExpectedRevision;
          }),
      ),
    );
    written += 1000;
  }
  const rate = written / ((performance.now() - start) / 1000);
  await log.close();
  return rate;
}

// ---- one-event appends from 100 concurrent appenders -------------------------------------------
async function singles(engine) {
  const backend = await engines[engine]("singles");
  const log = new EventLog(backend, { actor: "bench" });
  const start = performance.now();
  await Promise.all(
    Array.from({ length: 100 }, async (_, a) => {
      let rev = "no_stream";
      for (let k = 0; k < SINGLES_EACH; k++)
        rev = (await log.append(`bench-a${a}`, [note(k)], { expectedRevision: rev })).nextExpectedRevision;
    }),
  );
  const rate = (100 * SINGLES_EACH) / ((performance.now() - start) / 1000);
  const stats = backend.stats?.();
  await log.close();
  return { rate, sends: stats?.sends };
}

// ---- subscription delivery: append on one client, delivered on another -------------------------
async function latency(engine) {
  const writerBackend = await engines[engine]("latency");
  const writer = new EventLog(writerBackend, { actor: "bench" });
  // SQLite: the same client (its other-process watch polls); EventStoreDB: a second client.
  const reader =
    engine === "sqlite"
      ? writer
      : new EventLog(await EventStoreBackend.open({ connectionString: url, stream: writerBackend.stream }), {
          actor: "bench",
        });
  const sent = new Map();
  const lat = [];
  const sub = reader.subscribe((e) => {
    const t0 = sent.get(e.data.i);
    if (t0 !== undefined) lat.push(performance.now() - t0);
  });
  await sub.caughtUp;
  for (let i = 0; i < LATENCY_N; i++) {
    sent.set(i, performance.now());
    await writer.append("bench-sub", [note(i)], { expectedRevision: "any" });
    await new Promise((r) => setTimeout(r, 1));
  }
  while (lat.length < LATENCY_N) await new Promise((r) => setTimeout(r, 5));
  await sub.close();
  if (reader !== writer) await reader.close();
  await writer.close();
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

// ---- several writers on one log: what the one stream's compare-and-set costs --------------------
async function writers(n) {
  const stream = nextStream();
  const backends = await Promise.all(
    Array.from({ length: n }, () => EventStoreBackend.open({ connectionString: url, stream })),
  );
  const perWriter = quick ? 300 : 1000;
  const start = performance.now();
  await Promise.all(
    backends.map(async (b, w) => {
      const log = new EventLog(b, { actor: `bench-${w}` });
      // Ten appenders per writer, each on streams of its own: no Chronolog conflict, only the
      // EventStoreDB stream's.
      await Promise.all(
        Array.from({ length: 10 }, async (_, a) => {
          let rev = "no_stream";
          for (let k = 0; k < perWriter / 10; k++)
            rev = (await log.append(`bench-w${w}-a${a}`, [note(k)], { expectedRevision: rev }))
              .nextExpectedRevision;
        }),
      );
    }),
  );
  const secs = (performance.now() - start) / 1000;
  const total = n * perWriter;
  const sends = backends.reduce((s, b) => s + b.stats().sends, 0);
  const conflicts = backends.reduce((s, b) => s + b.stats().conflicts, 0);
  for (const b of backends) await b.close();
  return { rate: total / secs, sends, conflicts, total };
}

const results = {};
for (const engine of ["sqlite", "eventstore"]) {
  results[engine] = {
    batched: await batched(engine),
    singles: await singles(engine),
    latency: await latency(engine),
  };
}
const contention = [];
for (const n of [1, 2, 4]) contention.push({ n, ...(await writers(n)) });
server?.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });

const s = results.sqlite;
const e = results.eventstore;
console.log(`\nbench/eventstore (EventStoreDB log on the ${where}; SQLite beside it, same run)\n`);
printTable(
  ["measure", "sqlite", `eventstore (${server ? "stand-in" : "server"})`],
  [
    [
      `batched appends, events/s (10 per append, 100 at once, ${fmt(BATCHED)} events)`,
      fmt(s.batched),
      fmt(e.batched),
    ],
    [
      `one-event appends, 100 concurrent appenders, events/s (${fmt(100 * SINGLES_EACH)})`,
      fmt(s.singles.rate),
      fmt(e.singles.rate),
    ],
    ["  ... EventStoreDB appends sent", "", fmt(e.singles.sends)],
    [`subscription delivery p50, ms (${LATENCY_N} events)`, fmt(s.latency.p50, 3), fmt(e.latency.p50, 3)],
    ["subscription delivery p99, ms", fmt(s.latency.p99, 3), fmt(e.latency.p99, 3)],
  ],
);
console.log(
  `\nseveral writers on one EventStoreDB log (${where}): 10 appenders each, no Chronolog conflicts\n`,
);
printTable(
  [
    "writers",
    "appends/s",
    "EventStoreDB appends sent",
    "conflicts (caught up, re-sent)",
    "conflicts per append",
  ],
  contention.map((c) => [
    String(c.n),
    fmt(c.rate),
    fmt(c.sends),
    fmt(c.conflicts),
    fmt(c.conflicts / c.total, 3),
  ]),
);
