import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SchedulerProjection } from "@chronolog/core";
import { decodeStoredEvent, GENESIS_HASH, hashStored, type StoredEvent } from "@chronolog/log";
import { describe, expect, it } from "vitest";

/**
 * A log recorded by an earlier version of Chronolog (`chronolog up --example` plus a flaky and a
 * failing task, a pause, a backfill), replayed through the current code: every event must still
 * decode, the hash chain must still verify, and the projection must fold to the same state.
 */
const lines = readFileSync(
  fileURLToPath(new URL("./fixtures/golden-embedded-v1.jsonl", import.meta.url)),
  "utf8",
)
  .split("\n")
  .filter(Boolean)
  .map((l) => {
    const raw = JSON.parse(l) as Omit<StoredEvent, "revision" | "position"> & {
      revision: string;
      position: string;
    };
    return { ...raw, revision: BigInt(raw.revision), position: BigInt(raw.position) } as StoredEvent;
  });

describe("golden log: an embedded log recorded by an earlier version", () => {
  it("verifies its hash chain with today's code", () => {
    let prev = GENESIS_HASH;
    for (const e of lines) {
      expect(e.metadata.prevHash, `position ${e.position}`).toBe(prev);
      const hash = hashStored(prev, e);
      expect(hash, `position ${e.position}`).toBe(e.metadata.hash);
      prev = hash;
    }
  });

  it("decodes every event and folds to the state it had", () => {
    const projection = new SchedulerProjection();
    for (const e of lines) projection.apply(decodeStoredEvent(e));
    const task = (id: string) => projection.tasks.get(id);
    expect(projection.tasks.size).toBe(5);
    expect(task("ingest/acme/orders_raw/ALL")?.prevIntervalStart).toBe("2026-11-29T19:00:00.000Z");
    expect(task("ingest/acme/orders_raw/ALL")?.backfill).toBeNull();
    expect(task("ops/acme/flaky/ALL")).toMatchObject({
      status: "active",
      prevIntervalStart: "2026-11-29T19:00:00.000Z",
    });
    expect(task("ops/acme/doomed/ALL")?.failure).toMatchObject({
      logicalDate: "2026-11-29T12:00:00.000Z",
      state: "failed",
    });
    expect(task("sales/acme/orders_enriched/ALL")?.prevIntervalStart).toBe("2026-11-28T02:00:00.000Z");
    expect(task("sales/acme/orders_daily_report/ALL")?.logicalDate).toBe("2026-11-29T02:00:00.000Z");
    const runs = [...projection.runs.values()];
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => r.status === "success")).toBe(true);
    expect(projection.connections.get("warehouse")?.maxParallelism).toBe(2);
    // Only the failed interval is still held in memory: everything else is history.
    expect([...projection.instances.values()].map((i) => i.status)).toEqual(["failed"]);
  });
});
