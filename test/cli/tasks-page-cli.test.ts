import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

const left = new Leftovers();
afterAll(() => left.clear());

interface Row {
  task: string;
  condition: string;
}

/**
 * `chronolog tasks --limit N [--after TASK]`: a page of the list, in key order, as the whole list
 * shows it; the hint on stderr names the next page; the same pages as of an earlier position.
 */
describe("chronolog tasks, a page at a time", () => {
  it("pages through the list as the whole list orders it, now and --at a position", () => {
    const dir = tempDataDir("tasks-page");
    left.dirs.push(dir);
    const file = join(dir, "tasks.yaml");
    const names = ["t9", "t10", "t1", "b", "a", "t2", "z"];
    const line = (n: string, i: number) =>
      `  - { project: p${i % 3}, account: a, name: ${n}, cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", operator: { type: noop } }`;
    writeFileSync(file, `tasks:\n${names.map(line).join("\n")}\n`);
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const at = JSON.parse(
      chronolog(dir, ["log", "read", "--json"]).stdout.trim().split("\n").at(-1) ?? "{}",
    ).position;
    expect(chronolog(dir, ["pause", "p1/a/t10", "--reason", "later"]).code).toBe(0);
    const list = (...args: string[]) => {
      const r = chronolog(dir, ["tasks", "--json", ...args]);
      expect(r.code).toBe(0);
      return { rows: JSON.parse(r.stdout) as Row[], stderr: r.stderr };
    };
    for (const asOf of [[], ["--at", String(at)]]) {
      const whole = list(...asOf).rows;
      expect(whole.map((r) => r.task)).toEqual(whole.map((r) => r.task).sort());
      expect(whole).toHaveLength(names.length);
      const pages: Row[] = [];
      let after: string[] = [];
      for (;;) {
        const page = list(...asOf, "--limit", "3", ...after);
        pages.push(...page.rows);
        const last = page.rows.at(-1)?.task;
        if (pages.length < names.length) {
          expect(page.stderr).toContain(`more tasks follow: chronolog tasks --limit 3 --after ${last}\n`);
          after = ["--after", last as string];
        } else {
          expect(page.stderr).not.toContain("more tasks follow");
          break;
        }
      }
      // The same rows, conditions too (paused now, not yet as of the declaration).
      expect(pages).toEqual(whole);
    }
    expect(list().rows.find((r) => r.task === "p1/a/t10/ALL")?.condition).toBe("paused");
    expect(list("--at", String(at)).rows.find((r) => r.task === "p1/a/t10/ALL")?.condition).not.toBe(
      "paused",
    );
    // A key without its partition reads as the whole key: the page starts after that task.
    expect(list("--limit", "1", "--after", "p0/a/t9").rows[0]?.task).toBe(list().rows[2]?.task);
    const bad = chronolog(dir, ["tasks", "--limit", "0"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--limit takes a whole number above 0, not "0"');
  }, 180_000);
});
