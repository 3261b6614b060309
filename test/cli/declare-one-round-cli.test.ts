import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";

let dir: string;
beforeEach(() => {
  dir = tempDataDir("declare-round");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** One file with a problem of every kind: schema, value, parent, cycle, template. */
const TEAM = `
workflows:
  - name: etl
    project: sales
    account: acme
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    params: { region: eu }
    tasks:
      - name: load
        operator: { type: shell, command: "load {{ params.zone }}" }
tasks:
  - project: sales
    account: acme
    name: broken
    colour: red
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
  - project: sales
    account: acme
    name: late
    cron: "0 25 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
    parents: ["other/team/later"]
  - project: sales
    account: acme
    name: a
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
    parents: ["sales/acme/b", "not/a/key/at/all/really"]
  - project: sales
    account: acme
    name: b
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: shell, command: "echo {{ dss }}" }
    parents: ["sales/acme/a"]
`;

describe("chronolog declare: every problem of a file in one round", () => {
  it("prints each problem with its file, field and task, and writes nothing", () => {
    const file = join(dir, "team.yaml");
    writeFileSync(file, TEAM);
    const r = chronolog(dir, ["declare", file]);
    expect(r.code, r.stdout).toBe(2);
    const expected = [
      `${file}: tasks[0].colour: sales/acme/broken/ALL: unknown field "colour"`,
      `${file}: tasks[1].cron: sales/acme/late/ALL: invalid cron "0 25 * * *"`,
      `${file}: tasks[2].parents[1]: sales/acme/a/ALL: parent `,
      `${file}: tasks[3].parents[0]: sales/acme/b/ALL: dependency cycle (each task is a parent of the next): sales/acme/a/ALL -> sales/acme/b/ALL -> sales/acme/a/ALL`,
      `${file}: workflows[0].tasks[0].operator.command: sales/acme/load/ALL: undefined param "params.zone"`,
      `${file}: tasks[3].operator.command: sales/acme/b/ALL: undefined variable "dss" (line 1, column `,
    ];
    for (const text of expected) expect(r.stderr).toContain(text);
    // Refused: nothing was declared, so no warning follows on ("the task will wait for it").
    expect(r.stderr).not.toContain("warning:");
    expect(chronolog(dir, ["tasks", "--json"]).stdout.trim()).toBe("[]");
  });
});
