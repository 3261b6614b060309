import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, diffPositions } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const task = (name: string, parents: string[]) => ({
  project: "p",
  account: "acme",
  name,
  cron: "0 * * * *",
  startDate: "2026-11-30T00:00:00Z",
  operator: { type: "noop" },
  parents,
});

describe("diff between two positions", () => {
  it("names a declaration that changed only its parents as changed", async () => {
    dir = mkdtempSync(join(tmpdir(), "chronolog-diff-"));
    const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    try {
      const projection = new SchedulerProjection();
      const first = { tasks: [task("a", []), task("b", [])] };
      await declare(log, projection, [{ filename: "one.json", document: first }], Date.now());
      await catchUp(log, projection);
      const from = projection.position;
      const again = { tasks: [task("a", []), task("b", ["p/acme/a"])] };
      await declare(log, projection, [{ filename: "two.json", document: again }], Date.now());
      await catchUp(log, projection);
      expect(projection.position).toBeGreaterThan(from);
      // The parents are held apart from the rest of the declaration: the diff still sees them.
      expect(projection.tasks.get("p/acme/b/ALL")?.parents).toEqual([
        { project: "p", account: "acme", name: "a", partition: "ALL" },
      ]);
      const diff = await diffPositions(log, dir, from, projection.position);
      const b = diff.changes.find((c) => c.kind === "task" && c.id === "p/acme/b/ALL");
      expect(b?.changes).toContainEqual({ field: "declaration", from: "declared", to: "changed" });
      expect(diff.changes.find((c) => c.kind === "task" && c.id === "p/acme/a/ALL")).toBeUndefined();
    } finally {
      await log.close();
    }
  });
});
