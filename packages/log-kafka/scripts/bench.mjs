// Append throughput against a running cluster (build first: npx tsc -b).
// Usage: node packages/log-kafka/scripts/bench.mjs BROKERS [APPENDS] [IN_FLIGHT] [EVENTS_PER_APPEND]
import { randomUUID } from "node:crypto";
import { EventLog } from "@chronolog/log";
import { KafkaBackend } from "../dist/index.js";

const [brokers = "127.0.0.1:19092", appends = "20000", inFlight = "1000", perAppend = "1"] =
  process.argv.slice(2);
const topic = `chronolog-bench.${randomUUID().slice(0, 8)}`;
const backend = await KafkaBackend.open({ brokers, topic });
const log = new EventLog(backend, { actor: "bench" });
const note = (i) => ({ type: "Note", data: { text: `event ${i}`, n: i } });

// Latency of one append at a time.
const latencies = [];
for (let i = 0; i < 200; i++) {
  const t = performance.now();
  await log.append(`bench-seq`, [note(i)], { expectedRevision: "any" });
  latencies.push(performance.now() - t);
}
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.floor((latencies.length - 1) * p)].toFixed(1);
console.log(`one at a time: p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`);

// Throughput with many appends in flight: each worker appends to its own stream, with the
// expected revision checked, so the log batches appends of many streams per request.
const total = Number(appends);
const k = Number(perAppend);
const before = backend.stats().sends;
let next = 0;
const start = performance.now();
async function worker(id) {
  let expectedRevision = "no_stream";
  while (next < total) {
    const i = next++;
    const events = Array.from({ length: k }, (_, j) => note(i * k + j));
    const r = await log.append(`bench-w${id}`, events, { expectedRevision });
    expectedRevision = r.nextExpectedRevision;
  }
}
await Promise.all(Array.from({ length: Number(inFlight) }, (_, id) => worker(id)));
const seconds = (performance.now() - start) / 1000;
const sends = backend.stats().sends - before;
console.log(
  `${total} appends x ${k} event(s), ${inFlight} in flight: ${(total / seconds).toFixed(0)} appends/s, ` +
    `${((total * k) / seconds).toFixed(0)} events/s, ${sends} produce requests (${(total / sends).toFixed(0)} appends each)`,
);
const t = performance.now();
const verified = await log.verify();
console.log(
  `verify: ${verified.checked} events, break ${verified.break}, ${(performance.now() - t).toFixed(0)} ms`,
);
await log.close();
