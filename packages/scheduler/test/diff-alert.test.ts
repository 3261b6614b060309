import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alertStream } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { diffPositions } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("diff of an alert", () => {
  it("is listed as an alert, with how its sinks' deliveries moved", async () => {
    const dir = mkdtempSync(join(tmpdir(), "chronolog-diff-alert-"));
    dirs.push(dir);
    const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    try {
      const alertId = "task_failed:p/a/t/ALL@2026-11-28T02:00:00.000Z";
      const stream = alertStream(alertId);
      const raised = await log.append(
        stream,
        [
          {
            type: "AlertRaised",
            data: {
              alertId,
              kind: "task_failed",
              task: { project: "p", account: "a", name: "t", partition: "ALL" },
              logicalDate: "2026-11-28T02:00:00.000Z",
              reason: "exit code 1",
              sinks: [{ command: "true" }, { command: "false" }],
            },
          },
        ],
        { expectedRevision: "no_stream" },
      );
      await log.append(
        stream,
        [
          { type: "AlertDelivered", data: { alertId, sink: 0, attempt: 1 } },
          {
            type: "AlertDeliveryFailed",
            data: { alertId, sink: 1, attempt: 1, error: "exit code 1", retryAt: "2026-11-28T03:00:00.000Z" },
          },
        ],
        { expectedRevision: 0n },
      );
      const head = await log.headPosition();
      const diff = await diffPositions(log, dir, raised.position, head);
      expect(diff.changes).toEqual([
        expect.objectContaining({
          kind: "alert",
          id: alertId,
          changes: [
            { field: "delivered", from: 0, to: 1 },
            { field: "pending", from: 2, to: 1 },
          ],
        }),
      ]);
      // From before it was raised: raised, with its kind.
      const whole = await diffPositions(log, dir, -1n, head);
      expect(whole.changes[0]?.changes).toContainEqual({ field: "kind", from: null, to: "task_failed" });
    } finally {
      await log.close();
    }
  });
});
