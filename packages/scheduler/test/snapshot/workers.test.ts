import { instanceStream, workerStream } from "@chronolog/core";
import { loadProjection } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import { checkpointed, dir, log, useSnapshotFixture } from "./fixture.js";

/**
 * Remote workers survive a checkpoint: a worker connected and the attempt it runs, written to
 * a real SQLite log, are in the checkpoint file, and a projection restored from it (as
 * `chronolog up` and every read command restore one) lists them, then folds on from there.
 */
useSnapshotFixture();

const T0 = { project: "p0", account: "acme", name: "t0", partition: "ALL" };
const stream = instanceStream(T0, "2026-11-30T00:00:00.000Z");

describe("the checkpoint file and remote workers", () => {
  it("holds the workers connected and what they run; the restored projection folds on", async () => {
    await log.append(
      workerStream("gpu-1"),
      [
        {
          type: "WorkerConnected",
          data: {
            worker: "gpu-1",
            host: "gpu-1.lab",
            queues: ["gpu"],
            capacity: 2,
            version: "1 (chronolog 0.1.0)",
            running: [],
          },
        },
      ],
      { expectedRevision: "any" },
    );
    await log.append(
      stream,
      [
        {
          type: "AttemptStarted",
          data: {
            attempt: 1,
            token: "token-0001",
            workerId: "gpu-1",
            leaseExpiresAt: "2026-11-30T00:01:00.000Z",
          },
        },
      ],
      { expectedRevision: "any" },
    );
    const written = await checkpointed();
    expect(written.workers.connected()[0]?.running.map((a) => a.token)).toEqual(["token-0001"]);

    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.replayed).toBe(0);
    expect(loaded.projection.workers.connected()).toEqual(written.workers.connected());

    await log.append(
      stream,
      [
        {
          type: "AttemptSucceeded",
          data: { attempt: 1, token: "token-0001", durationMs: 5, exitCode: 0, cacheHit: false },
        },
      ],
      { expectedRevision: "any" },
    );
    await log.append(
      workerStream("gpu-1"),
      [{ type: "WorkerDisconnected", data: { worker: "gpu-1", reason: "said goodbye" } }],
      { expectedRevision: "any" },
    );
    const later = await loadProjection(log, dir);
    expect(later.replayed).toBe(2);
    expect(later.projection.workers.connected()).toEqual([]);
    expect(later.projection.workers.disconnected().map((w) => [w.id, w.reason])).toEqual([
      ["gpu-1", "said goodbye"],
    ]);
  });
});
