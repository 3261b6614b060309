import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";

/**
 * A declaration too large for one append (more streams than the embedded log takes in one) is
 * written in several; every event of it is checked before the first, so one the log refuses
 * (here, a task whose event is over a megabyte) leaves nothing written, and `--check` says so.
 */
let dir: string;
beforeEach(() => {
  dir = tempDataDir("declare-whole");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The log's head: its position and hash (an empty log has none). */
const head = (): string => chronolog(dir, ["log", "anchor"]).stdout.split(" ").slice(0, 2).join(" ");

describe("a declaration written in several appends", () => {
  it("refuses an event the log would refuse before writing any of it, and so does --check", () => {
    const task = (name: string, extra = "") =>
      `  - { project: p, account: a, name: ${name}, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, operator: { type: noop }${extra} }`;
    const lines = ["tasks:"];
    for (let i = 0; i < 5_001; i += 1) lines.push(task(`t${i}`));
    lines.push(task("huge", `, config: { blob: "${"x".repeat(1_100_000)}" }`));
    const file = join(dir, "big.yaml");
    writeFileSync(file, `${lines.join("\n")}\n`);
    const seed = join(dir, "seed.yaml");
    writeFileSync(seed, `tasks:\n${task("seed")}\n`);
    expect(chronolog(dir, ["declare", seed]).code).toBe(0);
    const before = head();
    expect(before).toMatch(/^\d+ [0-9a-f]{64}$/);

    const check = chronolog(dir, ["declare", "--check", file]);
    expect(check.code, check.stdout).toBe(2);
    expect(check.stderr).toContain(
      "task-p/a/huge/ALL: events[0] (TaskDeclared): data is larger than 1048576 bytes",
    );

    const r = chronolog(dir, ["declare", file]);
    expect(r.code, r.stdout).toBe(2);
    expect(r.stderr).toContain(
      "task-p/a/huge/ALL: events[0] (TaskDeclared): data is larger than 1048576 bytes",
    );
    expect(head()).toBe(before);
    expect(chronolog(dir, ["tasks"]).stdout).not.toContain("p/a/t0/ALL");
  });
});
