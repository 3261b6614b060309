// One process following a Kafka log, as a scheduler's client does: it opens the log (reading the
// topic to its end, from offset 0 or from a checkpoint), settles, and prints one line of JSON:
// how long the catch-up took and the process's memory after it.
//
//   node --expose-gc follow.mjs PACKAGE_DIST BROKERS TOPIC [INDEX_PATH] [save]
//
// PACKAGE_DIST is the built log-kafka package to use (this build's, or an earlier one's).
// With INDEX_PATH the client starts from the checkpoint there if it fits; with "save" it then
// writes one there and says how long that took.
import { statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dist, brokers, topic, indexPath, save] = process.argv.slice(2);
const { KafkaBackend } = await import(pathToFileURL(join(dist, "index.js")).href);
const notices = [];
const started = performance.now();
const backend = await KafkaBackend.open({
  brokers,
  topic,
  createTopic: false,
  // An earlier build gave up a catch-up that took longer than one request may: not a failure here.
  requestTimeoutMs: 600_000,
  ...(indexPath
    ? { indexPath, notice: (level, message, fields) => notices.push({ level, message, fields }) }
    : {}),
});
const catchUpMs = performance.now() - started;
const stats = backend.stats();

/** Collects garbage until the heap stops shrinking: what is left is what the client holds. */
async function settle() {
  let last = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 200));
    const used = process.memoryUsage().heapUsed;
    if (used > last * 0.99) break;
    last = used;
  }
}
await settle();
const memory = process.memoryUsage();
let saved = null;
if (save === "save") {
  const t = performance.now();
  await backend.saveIndex();
  saved = { ms: performance.now() - t, bytes: statSync(indexPath).size };
}
await backend.close().catch(() => {});
process.stdout.write(
  `${JSON.stringify({
    catchUpMs,
    events: stats.events,
    streams: stats.streams,
    offset: String(stats.offset),
    reread: stats.reread ?? null,
    rss: memory.rss,
    maxRss: process.resourceUsage().maxRSS * 1024,
    heapUsed: memory.heapUsed,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
    notices,
    saved,
  })}\n`,
);
process.exit(0);
