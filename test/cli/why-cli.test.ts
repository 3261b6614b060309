import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface Row {
  task: string;
  condition: string;
  reasons: string[];
}

/**
 * `chronolog why` and `chronolog tasks --json`, run beside `chronolog up` as a user would: a task
 * held for its connection's only slot says so, with the holder, and has no attempt while held.
 */
describe("chronolog why beside a running scheduler", () => {
  it("names the connection, its slots in use and who holds them; tasks --json agrees", async () => {
    const dir = tempDataDir("why");
    left.dirs.push(dir);
    const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
    const wait = (name: string) => `while [ ! -e ${dir}/${name}.go ]; do sleep 0.05; done`;
    const file = join(dir, "pg.yaml");
    writeFileSync(
      file,
      `connections:
  - { name: pg, operators: [shell], maxParallelism: 1 }
tasks:
  - { project: p, account: a, name: s1, cron: "0 * * * *", startDate: "${latest}", connection: pg, idempotent: true, operator: { type: shell, command: "${wait("s1")}" } }
  - { project: p, account: a, name: s2, cron: "0 * * * *", startDate: "${latest}", connection: pg, idempotent: true, operator: { type: shell, command: "${wait("s2")}" } }
  - { project: p, account: a, name: later, parents: [p/a/s2/ALL], cron: "0 * * * *", startDate: "${latest}", idempotent: true, operator: { type: noop } }
`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    expect(chronolog(dir, ["pause", "p/a/later/ALL", "--reason", "waiting for the new schema"]).code).toBe(0);
    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    const rows = await waitUntil("s1 to run and s2 to be held", () => {
      const r = chronolog(dir, ["tasks", "--json"]);
      const list = JSON.parse(r.stdout || "[]") as Row[];
      const by = Object.fromEntries(list.map((t) => [t.task, t]));
      return by["p/a/s1/ALL"]?.condition === "running" && by["p/a/s2/ALL"]?.condition === "held"
        ? by
        : undefined;
    });
    expect(rows["p/a/s2/ALL"]?.reasons[0]).toMatch(
      /^waiting for a slot on connection pg \(1 of 1 in use: p\/a\/s1\/ALL since \d\d:\d\d:\d\dZ\)$/,
    );
    const why = chronolog(dir, ["why", "p/a/s2/ALL"]);
    expect(why.code).toBe(0);
    expect(why.stdout).toMatch(
      /^p\/a\/s2\/ALL: held\n {2}waiting for a slot on connection pg \(1 of 1 in use: p\/a\/s1\/ALL since /,
    );
    // Held means no attempt: the scheduler has written no intent for it.
    expect(JSON.parse(chronolog(dir, ["attempts", "p/a/s2/ALL", "--json"]).stdout)).toEqual([]);
    const paused = chronolog(dir, ["why", "p/a/later/ALL"]);
    expect(paused.stdout).toBe("p/a/later/ALL: paused\n  the task is paused: waiting for the new schema\n");
    writeFileSync(join(dir, "s1.go"), "");
    writeFileSync(join(dir, "s2.go"), "");
    await waitUntil("s2 to finish", () => {
      const r = chronolog(dir, ["tasks", "--json"]);
      const s2 = (JSON.parse(r.stdout || "[]") as Array<Row & { prevIntervalStart: string | null }>).find(
        (t) => t.task === "p/a/s2/ALL",
      );
      return s2?.prevIntervalStart === latest ? true : undefined;
    });
    const unknown = chronolog(dir, ["why", "p/a/nope/ALL"]);
    expect(unknown.code).toBe(4);
    expect(unknown.stdout).toContain("no task p/a/nope/ALL is declared");
  }, 90_000);
});
