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
    // One interval each: an hour that turns during the test adds none.
    const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
    const wait = (name: string) => `while [ ! -e ${dir}/${name}.go ]; do sleep 0.05; done`;
    const file = join(dir, "pg.yaml");
    writeFileSync(
      file,
      `connections:
  - { name: pg, operators: [shell], maxParallelism: 1 }
tasks:
  - { project: p, account: a, name: s1, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", connection: pg, idempotent: true, operator: { type: shell, command: "${wait("s1")}" } }
  - { project: p, account: a, name: s2, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", connection: pg, idempotent: true, operator: { type: shell, command: "${wait("s2")}" } }
  - { project: p, account: a, name: later, parents: [p/a/s2/ALL], cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: true, operator: { type: noop } }
`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    expect(chronolog(dir, ["pause", "p/a/later/ALL", "--reason", "waiting for the new schema"]).code).toBe(0);
    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    // One of the two takes the slot (both are decided in the same pass; either may win it).
    const [holder, waiter] = await waitUntil("one to run and the other to be held", () => {
      const r = chronolog(dir, ["tasks", "--json"]);
      const by = Object.fromEntries((JSON.parse(r.stdout || "[]") as Row[]).map((t) => [t.task, t]));
      for (const [h, w] of [
        ["s1", "s2"],
        ["s2", "s1"],
      ] as const)
        if (by[`p/a/${h}/ALL`]?.condition === "running" && by[`p/a/${w}/ALL`]?.condition === "held")
          return [h, w, by] as const;
      return undefined;
    }).then(([h, w, by]) => {
      expect(by[`p/a/${w}/ALL`]?.reasons[0]).toMatch(
        new RegExp(
          `^waiting for a slot on connection pg \\(1 of 1 in use: p/a/${h}/ALL since \\d\\d:\\d\\d:\\d\\dZ\\); first in line for it \\(its priority 0\\)$`,
        ),
      );
      return [h, w];
    });
    const why = chronolog(dir, ["why", `p/a/${waiter}/ALL`]);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain(
      `p/a/${waiter}/ALL: held\n  waiting for a slot on connection pg (1 of 1 in use: p/a/${holder}/ALL since `,
    );
    // Held means no attempt: the scheduler has written no intent for it.
    expect(JSON.parse(chronolog(dir, ["attempts", `p/a/${waiter}/ALL`, "--json"]).stdout)).toEqual([]);
    const paused = chronolog(dir, ["why", "p/a/later/ALL"]);
    expect(paused.stdout).toBe(
      "p/a/later/ALL: paused\n  the task is paused: waiting for the new schema\nnext steps:\n  chronolog resume p/a/later/ALL\n",
    );
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
