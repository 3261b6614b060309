/*
 * The embedded log's writer in a thread of its own (see ThreadWriter): it opens its own
 * connection to the file and makes each group commit the backend hands it, so that the inserts,
 * the hash chain and the fsync's wait leave the backend's thread free.
 */
import { parentPort, workerData } from "node:worker_threads";
import { BatchWriter, type WriteItem } from "./batch-writer.js";
import { type ConnectionSettings, openConnection } from "./connection.js";
import { RowsV1 } from "./rows-v1.js";
import { RowsV2 } from "./rows-v2.js";
import type { LayoutVersion } from "./schema.js";
import type { ToWriter } from "./thread-writer.js";

const { settings, layout, firstPosition } = workerData as {
  settings: ConnectionSettings;
  layout: LayoutVersion;
  firstPosition: bigint;
};
const port = parentPort;
if (!port) throw new Error("the log's writer thread runs only as a worker thread");
const db = openConnection(settings);
const writer = new BatchWriter(db, layout === 1 ? new RowsV1(db) : new RowsV2(db), firstPosition, {
  path: settings.path,
  limitBytes: settings.walLimitBytes,
  busyTimeoutMs: settings.busyTimeoutMs,
});

port.on("message", (m: ToWriter) => {
  if (m.kind === "close") {
    writer.close();
    db.close();
    port.postMessage({ kind: "closed", commits: writer.commits, walCheckpoints: writer.walCheckpoints });
    port.close();
    return;
  }
  try {
    const outcome = writer.write(m.items as readonly WriteItem[], m.recordedAt);
    port.postMessage({ kind: "written", id: m.id, outcome, commits: writer.commits });
  } catch (error) {
    const e = error as { message?: unknown; code?: unknown };
    port.postMessage({
      kind: "failed",
      id: m.id,
      message: String(e?.message ?? error),
      ...(typeof e?.code === "string" ? { code: e.code } : {}),
    });
  }
});
