import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

/** The last hour, a single interval of an hourly task. */
const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
const end = new Date(Date.parse(start) + HOUR / 2).toISOString();

const workflow = (command: string) => `workflows:
  - name: wf
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${start}"
    endDate: "${end}"
    params: { note: "" }
    tasks:
      - name: t
        idempotent: true
        operator:
          type: shell
          command: ${JSON.stringify(command)}
`;

/**
 * A shell command whose placeholder stands where its single-quoted value is not one word is
 * refused at declare, in every such context, naming the file, the field, the line and column
 * and the variable to use; nothing is written.
 */
describe("declare refuses a placeholder that stands inside quotes, a here-document, $(...)", () => {
  const dir = tempDataDir("quoting");
  left.dirs.push(dir);
  const file = join(dir, "wf.yaml");

  const cases: Array<{ what: string; command: string; where: string; line: number; column: number }> = [
    {
      what: "double quotes",
      command: 'echo "dq: {{ params.note }}"',
      where: "inside double quotes",
      line: 1,
      column: 11,
    },
    {
      what: "single quotes",
      command: "sh -c 'echo {{ params.note }}'",
      where: "inside single quotes",
      line: 1,
      column: 13,
    },
    {
      what: "a here-document",
      command: "cat <<EOF\nnote: {{ params.note }}\nEOF",
      where: "in a here-document",
      line: 2,
      column: 7,
    },
    {
      what: "a quoted here-document",
      command: "cat <<'EOF'\n{{ params.note }}\nEOF",
      where: "in a here-document",
      line: 2,
      column: 1,
    },
    {
      what: "backquotes",
      command: "echo `echo {{ params.note }}`",
      where: "inside backquotes",
      line: 1,
      column: 12,
    },
    {
      what: "$(...)",
      command: "echo $(echo {{ params.note }})",
      where: "inside $(...)",
      line: 1,
      column: 13,
    },
  ];

  for (const c of cases) {
    it(`in ${c.what}`, () => {
      writeFileSync(file, workflow(c.command));
      const r = chronolog(dir, ["declare", file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `${file}: workflows[0].tasks[0].operator.command: p/a/t/ALL: {{ params.note }} stands ${c.where}, ` +
          `where its value would not be one quoted word and could run as shell code; use "$CHRONOLOG_PARAM_NOTE" ` +
          `instead (the same value, from the environment) (line ${c.line}, column ${c.column})`,
      );
    });
  }

  it("in builtins, tags and alert commands too, each field in one round", () => {
    writeFileSync(
      file,
      `${workflow("echo '{{ ds }}'")}      - { name: u, operator: { type: shell, command: "{% if params.note %}echo '{% endif %}'" } }
      - { name: v, operator: { type: noop }, alerts: [ { command: "notify \\"failed: {{ alert.reason }}\\"" } ] }
`,
    );
    const r = chronolog(dir, ["declare", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `workflows[0].tasks[0].operator.command: p/a/t/ALL: {{ ds }} stands inside single quotes`,
    );
    expect(r.stderr).toContain('use "$CHRONOLOG_DS" instead');
    expect(r.stderr).toContain(
      "workflows[0].tasks[1].operator.command: p/a/u/ALL: the {% endif %} tag stands inside single quotes",
    );
    expect(r.stderr).toContain(
      'workflows[0].tasks[2].alerts[0].command: p/a/v/ALL: {{ alert.reason }} stands inside double quotes, where its value would not be one quoted word and could run as shell code; use "$CHRONOLOG_ALERT_REASON" instead',
    );
    // Nothing of any refused declaration was written.
    expect(chronolog(dir, ["log", "read", "--json"]).stdout).toBe("");
  });

  it("accepts the placeholder in plain words, and the variable in quotes", () => {
    writeFileSync(file, workflow('echo {{ params.note }} "dq: $CHRONOLOG_PARAM_NOTE"'));
    const r = chronolog(dir, ["declare", file]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });
});

/**
 * A declaration written before the check (here appended to the log as it was) keeps loading,
 * but its task is held with the reason when it is due: it never runs.
 */
describe("a declaration already in the log with a quoted placeholder", () => {
  it("loads, is held with the reason, and never runs", async () => {
    const dir = tempDataDir("quoting-old");
    left.dirs.push(dir);
    const marker = join(dir, "ran");
    const key = { project: "p", account: "a", name: "old", partition: "ALL" };
    const spec = {
      key,
      cron: "0 * * * *",
      timezone: "UTC",
      startDate: start,
      endDate: end,
      catchup: true,
      operator: { type: "shell", command: `echo "{{ ds }}"; touch ${marker}`, env: {} },
      parents: [],
      retry: { maxAttempts: 1, initialDelayMs: 1000, factor: 2, maxDelayMs: 300000, jitter: 0.1 },
      idempotent: true,
      config: {},
      leaseSeconds: 30,
      alerts: [],
    };
    const appended = chronolog(dir, [
      "log",
      "append",
      "task-p/a/old/ALL",
      "--type",
      "TaskDeclared",
      "--expected-revision",
      "no_stream",
      "--data",
      JSON.stringify({
        key,
        spec,
        logicalDate: start,
        nextRunDate: new Date(Date.parse(start) + HOUR).toISOString(),
      }),
    ]);
    expect(appended.stderr).toBe("");
    expect(appended.code).toBe(0);
    // A task beside it runs, so the scheduler is seen at work.
    const file = join(dir, "ok.yaml");
    writeFileSync(
      file,
      `tasks:\n  - { project: p, account: a, name: ok, cron: "0 * * * *", startDate: "${start}", endDate: "${end}", idempotent: true, operator: { type: shell, command: "echo ok" } }\n`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);

    const reason =
      'operator.command: {{ ds }} stands inside double quotes, where its value would not be one quoted word and could run as shell code; use "$CHRONOLOG_DS" instead (the same value, from the environment) (line 1, column 7)';
    const why = chronolog(dir, ["why", "p/a/old/ALL"]);
    expect(why.stdout).toBe(
      `p/a/old/ALL: held\n  its payload does not render (${reason}): held until its declaration changes\n`,
    );

    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    let log = "";
    up.stdout?.on("data", (c: Buffer) => {
      log += c.toString();
    });
    up.stderr?.on("data", (c: Buffer) => {
      log += c.toString();
    });
    await waitUntil("the scheduler to hold the task", () =>
      log.includes('"payload render failed; the task is held"') ? true : undefined,
    );
    await waitUntil("the task beside it to succeed", () => {
      const rows = JSON.parse(chronolog(dir, ["attempts", "p/a/ok/ALL", "--json"]).stdout || "[]") as Array<{
        status: string;
      }>;
      return rows.at(-1)?.status === "success" ? true : undefined;
    });
    expect(log).toContain(reason.replaceAll('"', '\\"'));
    expect(JSON.parse(chronolog(dir, ["attempts", "p/a/old/ALL", "--json"]).stdout || "[]")).toEqual([]);
    expect(existsSync(marker)).toBe(false);
    expect(chronolog(dir, ["why", "p/a/old/ALL"]).stdout).toContain("p/a/old/ALL: held\n");
  }, 60_000);
});
