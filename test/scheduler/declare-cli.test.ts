import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";

let dir: string;
beforeEach(() => {
  dir = tempDataDir("declare");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const GOOD = `
connections:
  - name: warehouse
    operators: [shell]
    maxParallelism: 2
tasks:
  - project: ingest
    account: acme
    name: orders_raw
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: shell, command: "echo {{ ds }}" }
    connection: warehouse
  - project: sales
    account: acme
    name: orders_enriched
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
    parents: ["ingest/acme/orders_raw"]
`;

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function head(): string {
  const r = chronolog(dir, ["log", "read", "--json", "--limit", "100000"]);
  return r.stdout.trim().split("\n").filter(Boolean).at(-1) ?? "";
}

describe("chronolog declare", () => {
  it("records new tasks, nothing when unchanged, and what changed", () => {
    const first = chronolog(dir, ["declare", file("a.yaml", GOOD)]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("task ingest/acme/orders_raw/ALL: declared");
    expect(first.stdout).toContain("task sales/acme/orders_enriched/ALL: declared");
    expect(first.stdout).toContain("connection warehouse: declared");
    const before = head();
    const again = chronolog(dir, ["declare", file("a.yaml", GOOD)]);
    expect(again.stdout).toContain("task ingest/acme/orders_raw/ALL: unchanged");
    expect(head()).toBe(before);
    const changed = chronolog(dir, [
      "declare",
      file("b.yaml", GOOD.replace("echo {{ ds }}", "echo {{ ds_nodash }}")),
    ]);
    expect(changed.stdout).toContain("task ingest/acme/orders_raw/ALL: changed");
    expect(changed.stdout).toContain('operator.command: "echo {{ ds }}" -> "echo {{ ds_nodash }}"');
    const tasks = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout);
    expect(tasks.map((t: { task: string }) => t.task)).toEqual([
      "ingest/acme/orders_raw/ALL",
      "sales/acme/orders_enriched/ALL",
    ]);
  });

  it("a missing parent is a warning, and the task shows as blocked with that reason", () => {
    const r = chronolog(dir, [
      "declare",
      file(
        "child.yaml",
        `tasks:
  - { project: sales, account: acme, name: child, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, operator: { type: noop }, parents: ["other/team/later"] }
`,
      ),
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: .*parent other\/team\/later\/ALL is not declared/);
    const why = chronolog(dir, ["why", "sales/acme/child"]);
    expect(why.stdout).toContain("blocked");
    expect(why.stdout).toContain("parent other/team/later/ALL is not declared");
  });

  const bad: Array<[string, string, RegExp]> = [
    ["unknown field", GOOD.replace("name: orders_raw", "name: orders_raw\n    colour: red"), /colour/],
    ["bad cron", GOOD.replace('cron: "0 2 * * *"', 'cron: "61 2 * * *"'), /cron/],
    [
      "bad time zone",
      GOOD.replace(
        '    cron: "0 2 * * *"\n    startDate: 2026-11-01T00:00:00Z\n    operator: { type: shell',
        '    cron: "0 2 * * *"\n    timezone: Mars/Olympus\n    startDate: 2026-11-01T00:00:00Z\n    operator: { type: shell',
      ),
      /Mars\/Olympus/,
    ],
    [
      "operator and connection that do not pair",
      GOOD.replace("operators: [shell]", "operators: [http]"),
      /warehouse.*http/,
    ],
    ["malformed YAML", "tasks:\n  - project: [unclosed\n", /line \d+, column \d+/],
    [
      "a template that fails to render",
      GOOD.replace("echo {{ ds }}", "echo {{ dss }}"),
      /: tasks\[\d+\]\.operator\.command: ingest\/acme\/orders_raw\/ALL: undefined variable "dss" \(line 1, column \d+\)/,
    ],
    [
      "a cycle",
      `${GOOD}
  - project: ingest
    account: acme
    name: loop
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
    parents: ["sales/acme/orders_enriched"]
`.replace('parents: ["ingest/acme/orders_raw"]', 'parents: ["ingest/acme/orders_raw", "ingest/acme/loop"]'),
      /ingest\/acme\/loop\/ALL -> sales\/acme\/orders_enriched\/ALL -> ingest\/acme\/loop\/ALL|sales\/acme\/orders_enriched\/ALL -> ingest\/acme\/loop\/ALL -> sales\/acme\/orders_enriched\/ALL/,
    ],
  ];
  for (const [label, text, message] of bad) {
    it(`refuses ${label} with a clear error and writes nothing`, () => {
      chronolog(dir, ["log", "append", "note-start", "-t", "Note", "-d", '{"text":"start"}']);
      const before = head();
      const r = chronolog(dir, ["declare", file("bad.yaml", text)]);
      expect(r.code, r.stdout).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(head()).toBe(before);
    });
  }

  it("pause, resume and retire are recorded and shown", () => {
    chronolog(dir, ["declare", file("a.yaml", GOOD)]);
    expect(chronolog(dir, ["pause", "ingest/acme/orders_raw", "--reason", "maintenance"]).stdout).toContain(
      "paused",
    );
    expect(chronolog(dir, ["why", "ingest/acme/orders_raw"]).stdout).toContain("paused");
    const again = chronolog(dir, ["pause", "ingest/acme/orders_raw"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("is paused, not active");
    expect(chronolog(dir, ["resume", "ingest/acme/orders_raw"]).stdout).toContain("resumed");
    expect(chronolog(dir, ["retire", "ingest/acme/orders_raw"]).stdout).toContain("retired");
    const why = chronolog(dir, ["why", "sales/acme/orders_enriched", "--json"]);
    expect(JSON.parse(why.stdout).reasons.join(" ")).toMatch(/retired/);
    const history = chronolog(dir, ["history", "ingest/acme/orders_raw"]).stdout;
    for (const t of ["TaskDeclared", "TaskPaused", "TaskResumed", "TaskRetired"])
      expect(history).toContain(t);
    const unknown = chronolog(dir, ["why", "no/such/task"]);
    expect(unknown.stdout).toContain("no task no/such/task/ALL is declared");
  });

  const WORKFLOW = `
workflows:
  - name: etl
    project: sales
    account: acme
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    tasks:
      - { name: extract, operator: { type: noop } }
      - { name: load, parents: [extract], operator: { type: noop } }
`;
  const WITHOUT_LOAD = WORKFLOW.replace(/ {6}- \{ name: load.*\n/, "");

  it("a workflow's declaration is its whole task set: a task dropped from it is retired", () => {
    expect(chronolog(dir, ["declare", file("plain.yaml", GOOD)]).code).toBe(0);
    expect(chronolog(dir, ["declare", file("etl.yaml", WORKFLOW)]).code).toBe(0);
    const dropped = chronolog(dir, ["declare", file("etl2.yaml", WITHOUT_LOAD)]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain("task sales/acme/extract/ALL: unchanged");
    expect(dropped.stdout).toContain("task sales/acme/load/ALL: retired");
    const why = chronolog(dir, ["why", "sales/acme/load", "--json"]);
    expect(JSON.parse(why.stdout).reasons.join(" ")).toMatch(/retired/);
    const history = chronolog(dir, ["history", "sales/acme/load"]).stdout;
    expect(history).toContain("TaskRetired");
    const retiredEvent = chronolog(dir, ["log", "read", "--json", "--limit", "100000"])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .find((e) => e.type === "TaskRetired");
    expect(retiredEvent.data.reason).toBe("no longer in workflow etl's declaration");
    expect(retiredEvent.metadata.actor).toMatch(/^cli:/);
    // The plain tasks of another file are not part of any workflow: nothing retires them.
    const tasks = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout) as Array<{
      task: string;
      status: string;
    }>;
    expect(tasks.find((t) => t.task === "ingest/acme/orders_raw/ALL")?.status).toBe("active");
    expect(tasks.find((t) => t.task === "sales/acme/load/ALL")?.status).toBe("retired");
    // Declared again as it is now: nothing more to write.
    const before = head();
    const again = chronolog(dir, ["declare", file("etl2.yaml", WITHOUT_LOAD)]);
    expect(again.stdout).not.toContain("retired");
    expect(head()).toBe(before);
  });

  it("redeclaring a retired task is refused and writes nothing, unless --revive", () => {
    chronolog(dir, ["declare", file("etl.yaml", WORKFLOW)]);
    chronolog(dir, ["declare", file("etl2.yaml", WITHOUT_LOAD)]);
    const before = head();
    const refused = chronolog(dir, ["declare", file("etl.yaml", WORKFLOW)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/sales\/acme\/load\/ALL.*retired.*--revive/);
    expect(refused.stdout).not.toContain("unchanged");
    expect(head()).toBe(before);
    const revived = chronolog(dir, ["declare", "--revive", file("etl.yaml", WORKFLOW)]);
    expect(revived.code, revived.stderr).toBe(0);
    expect(revived.stdout).toContain("task sales/acme/load/ALL: revived");
    expect(chronolog(dir, ["history", "sales/acme/load"]).stdout).toContain("TaskRevived");
    expect(chronolog(dir, ["why", "sales/acme/load"]).stdout).not.toContain("retired");
  });

  it("--check prints what would change and writes nothing: exit 0 when valid, 2 when not", () => {
    const fresh = chronolog(dir, ["declare", "--check", file("etl.yaml", WORKFLOW)]);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toContain("task sales/acme/load/ALL: declared");
    expect(existsSync(join(dir, "log.db")), "no log created by a check").toBe(false);
    chronolog(dir, ["declare", file("etl.yaml", WORKFLOW)]);
    const before = head();
    const changed = WITHOUT_LOAD.replace(
      "name: extract, operator: { type: noop }",
      'name: extract, operator: { type: shell, command: "echo {{ ds }}" }',
    );
    const check = chronolog(dir, ["declare", "--check", file("etl2.yaml", changed)]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain("workflow etl: unchanged");
    expect(check.stdout).toContain("task sales/acme/extract/ALL: changed");
    expect(check.stdout).toContain(
      '  operator: {"type":"noop"} -> {"type":"shell","command":"echo {{ ds }}","env":{}}',
    );
    expect(check.stdout).toContain("task sales/acme/load/ALL: retired");
    expect(head()).toBe(before);
    expect(chronolog(dir, ["why", "sales/acme/load"]).stdout).not.toContain("retired");
    const invalid = chronolog(dir, [
      "declare",
      "--check",
      file("bad.yaml", WORKFLOW.replace('"0 2 * * *"', '"61 2 * * *"')),
    ]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/cron/);
    expect(head()).toBe(before);
    // A retired task declared again without --revive is invalid too.
    chronolog(dir, ["declare", file("etl3.yaml", WITHOUT_LOAD)]);
    const afterRetire = head();
    const retired = chronolog(dir, ["declare", "--check", file("etl.yaml", WORKFLOW)]);
    expect(retired.code).toBe(2);
    expect(retired.stderr).toMatch(/sales\/acme\/load\/ALL.*retired/);
    expect(chronolog(dir, ["declare", "--check", "--revive", file("etl.yaml", WORKFLOW)]).stdout).toContain(
      "task sales/acme/load/ALL: revived",
    );
    expect(head()).toBe(afterRetire);
  });
});
