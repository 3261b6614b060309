import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import { TaskIndex } from "../../services/api/src/task-index.js";

/*
 * The API's pages of tasks in key order: the sorted ids are kept, and the tasks declared since
 * the last page are merged in, wherever their keys sort.
 */
describe("the API's index of tasks", () => {
  it("pages every task in key order, those declared after a page too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "chronolog-task-index-"));
    const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    try {
      const now = Date.parse("2026-11-30T05:10:00Z");
      const projection = new SchedulerProjection();
      const index = new TaskIndex(projection);
      const task = (project: string, name: string) => ({
        project,
        account: "acme",
        name,
        cron: "0 * * * *",
        startDate: "2026-11-30T00:00:00Z",
        operator: { type: "noop" },
      });
      const declared: Record<string, unknown>[] = [];
      const every = () => {
        const ids: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const page = index.page(now, { limit: 7, ...(cursor ? { cursor } : {}) });
          ids.push(...page.items.map((r) => r.task));
          if (page.next === null) return ids;
          cursor = page.next;
        }
      };
      expect(every()).toEqual([]);
      for (const more of [
        [task("m", "b"), task("m", "d"), task("x", "a")],
        // Before, between and after those already sorted.
        [task("a", "z"), task("m", "c"), task("z", "z"), task("m", "a")],
        [task("m", "bb")],
        // More than are placed one at a time: merged in one pass.
        Array.from({ length: 1100 }, (_, i) => task(`q${i % 7}`, `n${i}`)),
      ]) {
        declared.push(...more);
        await declare(log, projection, [{ filename: "t.json", document: { tasks: declared } }], now);
        await catchUp(log, projection);
        expect(every()).toEqual([...projection.tasks.keys()].sort());
      }
      expect(every()).toHaveLength(1108);
    } finally {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
