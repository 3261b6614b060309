// bench/log: the embedded (SQLite) log against the disk's own limits, measured in the same run.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { EventLog } from "@chronolog/log";
import { SqliteBackend } from "@chronolog/log-sqlite";
import { fmt, percentile, printTable } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const TOTAL = quick ? 100_000 : 1_000_000;
const STREAMS = 1000;
const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-log-"));
const payload = "x".repeat(120);
const note = (i) => ({ type: "Note", data: { text: payload, i } });

// ---- the disk's limits -------------------------------------------------------------------
function diskLimits() {
  const file = join(dir, "raw.log");
  const fd = openSync(file, "a");
  const line = Buffer.from(
    `${JSON.stringify({ streamId: "bench-s1", revision: 1, type: "Note", data: note(1).data })}\n`,
  );
  const n = 200_000;
  let t = performance.now();
  for (let i = 1; i <= n; i++) {
    writeSync(fd, line);
    if (i % 1000 === 0) fdatasyncSync(fd);
  }
  const appendRate = n / ((performance.now() - t) / 1000);
  const lat = [];
  for (let i = 0; i < 500; i++) {
    writeSync(fd, line);
    t = performance.now();
    fdatasyncSync(fd);
    lat.push(performance.now() - t);
  }
  closeSync(fd);
  lat.sort((a, b) => a - b);
  return { appendRate, fsyncP50: percentile(lat, 50), fsyncP99: percentile(lat, 99) };
}

const disk = diskLimits();

// ---- batched appends: TOTAL events across 1,000 streams, 10 events per append, 100 appends per commit
async function batched() {
  const backend = new SqliteBackend({ path: join(dir, "batched.db"), watchOtherProcesses: false });
  const log = new EventLog(backend, { actor: "bench" });
  const revisions = new Array(STREAMS).fill("no_stream");
  const perAppend = 10;
  const concurrent = 100;
  let written = 0;
  let lastTenth = 0;
  const start = performance.now();
  let tenthStart = start;
  let i = 0;
  while (written < TOTAL) {
    const calls = [];
    for (let c = 0; c < concurrent; c++, i++) {
      const s = i % STREAMS;
      const events = Array.from({ length: perAppend }, (_, j) => note(written + c * perAppend + j));
      calls.push(
        log.append(`bench-s${s}`, events, { expectedRevision: revisions[s] }).then((r) => {
          revisions[s] = r.nextExpectedRevision;
        }),
      );
    }
    await Promise.all(calls);
    written += concurrent * perAppend;
    if (written > TOTAL * 0.9 && lastTenth === 0) {
      lastTenth = written;
      tenthStart = performance.now();
    }
  }
  const end = performance.now();
  const rate = written / ((end - start) / 1000);
  const lastRate = (written - lastTenth) / ((end - tenthStart) / 1000);
  const commits = backend.commits;
  // read all
  const readStart = performance.now();
  let read = 0;
  let from = 0n;
  for (;;) {
    const page = await log.readAll({ fromPosition: from, maxCount: 5000 });
    if (page.length === 0) break;
    read += page.length;
    from = page[page.length - 1].position + 1n;
  }
  const readRate = read / ((performance.now() - readStart) / 1000);
  const stats = backend.stats();
  await log.close();
  return { rate, lastRate, commits, readRate, read, bytes: Number(stats.pageCount * stats.pageSize) };
}

// ---- one-event appends from 100 concurrent appenders ----------------------------------------
async function concurrentSingles() {
  const backend = new SqliteBackend({ path: join(dir, "singles.db"), watchOtherProcesses: false });
  const log = new EventLog(backend, { actor: "bench" });
  const appenders = 100;
  const perAppender = quick ? 200 : 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: appenders }, async (_, a) => {
      let rev = "no_stream";
      for (let k = 0; k < perAppender; k++) {
        rev = (await log.append(`bench-a${a}`, [note(k)], { expectedRevision: rev })).nextExpectedRevision;
      }
    }),
  );
  const secs = (performance.now() - start) / 1000;
  const total = appenders * perAppender;
  const commits = backend.commits;
  await log.close();
  return { rate: total / secs, commits, total };
}

// ---- subscription latency: append to delivery ---------------------------------------------
async function subscriptionLatency() {
  const backend = new SqliteBackend({ path: join(dir, "sub.db"), watchOtherProcesses: false });
  const log = new EventLog(backend, { actor: "bench" });
  const sent = new Map();
  const lat = [];
  const n = quick ? 500 : 2000;
  const sub = log.subscribe((e) => {
    const t0 = sent.get(e.data.i);
    if (t0 !== undefined) lat.push(performance.now() - t0);
  });
  await sub.caughtUp;
  for (let i = 0; i < n; i++) {
    sent.set(i, performance.now());
    await log.append("bench-sub", [note(i)], { expectedRevision: "any" });
    await new Promise((r) => setTimeout(r, 1));
  }
  while (lat.length < n) await new Promise((r) => setTimeout(r, 5));
  await sub.close();
  await log.close();
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), n };
}

const b = await batched();
const s = await concurrentSingles();
const l = await subscriptionLatency();
rmSync(dir, { recursive: true, force: true });

console.log(
  `\nbench/log (SQLite, synchronous=FULL, ${TOTAL.toLocaleString("en-US")} events, ${STREAMS} streams)\n`,
);
printTable(
  ["measure", "chronolog", "disk limit", "target"],
  [
    [
      "batched appends, events/s (10 per append, 100 appends per commit)",
      fmt(b.rate),
      `${fmt(disk.appendRate)} (append file, fsync per 1,000)`,
      ">= 100,000",
    ],
    ["  ... over the last 10% of the run, events/s", fmt(b.lastRate), "", ""],
    ["  ... group commits made", fmt(b.commits), "", ""],
    [
      "one-event appends, 100 concurrent appenders, events/s",
      fmt(s.rate),
      `${fmt(1000 / disk.fsyncP50)} fsyncs/s`,
      ">= 20,000",
    ],
    [`  ... group commits made for ${fmt(s.total)} appends`, fmt(s.commits), "", ""],
    ["read all, events/s (parsed and upcast)", fmt(b.readRate), "", ""],
    [
      `subscription delivery p50, ms (${l.n} events)`,
      fmt(l.p50, 3),
      `fsync p50 ${fmt(disk.fsyncP50, 3)} ms`,
      "",
    ],
    ["subscription delivery p99, ms", fmt(l.p99, 3), `fsync p99 ${fmt(disk.fsyncP99, 3)} ms`, "< 5"],
    ["log file size, bytes per event", fmt(b.bytes / b.read, 1), "", ""],
  ],
);
