import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

interface AttemptRow {
  status: string;
  stdoutTail?: string;
}

/**
 * Workflow params through `trigger --param`, run by a real worker: the classic shell injections
 * reach the command as literal words and execute nothing.
 */
describe("workflow params beside a running scheduler", () => {
  it("runs a triggered run with its params quoted: nothing injected runs, the values arrive literal", async () => {
    const dir = tempDataDir("params");
    left.dirs.push(dir);
    const marker = (n: number) => join(dir, `F${n}`);
    const values: Record<string, string> = {
      subst: `$(touch ${marker(1)})`,
      backticks: `\`touch ${marker(2)}\``,
      semicolon: `; touch ${marker(3)}`,
      newline: `\ntouch ${marker(4)}`,
      single: `it's'; touch ${marker(5)}; '`,
      double: `"; touch ${marker(6)}; "`,
      option: "--option=1",
    };
    const names = Object.keys(values);
    const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
    const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
    const command = `printf '[%s]' ${names.map((n) => `{{ params.${n} }}`).join(" ")} {{ params.who | default: 'x' }}`;
    const file = join(dir, "wf.yaml");
    const workflow = (cmd: string) => `workflows:
  - name: inj
    project: p
    account: a
    cron: "0 * * * *"
    startDate: "${latest}"
    endDate: "${end}"
    params: { who: nobody, ${names.map((n) => `${n}: ""`).join(", ")} }
    tasks:
      - { name: echo, idempotent: true, operator: { type: shell, command: ${JSON.stringify(cmd)} } }
`;

    // Declared names only: an undeclared param is refused at declare, in the usual form.
    writeFileSync(file, workflow("echo {{ params.whom | default: 'a' }}"));
    const refused = chronolog(dir, ["declare", file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `${file}: workflows[0].tasks[0].operator.command: p/a/echo/ALL: undefined param "params.whom": the workflow does not declare it (its params are`,
    );
    writeFileSync(file, workflow("echo {{ params.who | raw }}"));
    expect(chronolog(dir, ["declare", file]).stderr).toContain("raw filter is not allowed");

    writeFileSync(file, workflow(command));
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.stderr).toBe("");
    expect(declared.code).toBe(0);

    // An undeclared --param is refused before anything is written.
    const before = chronolog(dir, ["log", "read", "--json"]).stdout;
    const unknown = chronolog(dir, ["trigger", "inj", "--param", "nope=1"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('workflow inj has no param "nope" (its params are backticks, double,');
    expect(chronolog(dir, ["log", "read", "--json"]).stdout).toBe(before);

    const args = names.flatMap((n) => ["--param", `${n}=${values[n]}`]);
    const triggered = chronolog(dir, ["trigger", "inj", "--logical-date", latest, ...args]);
    expect(triggered.stderr).toBe("");
    expect(triggered.code).toBe(0);
    const run = JSON.parse(chronolog(dir, ["runs", "inj", "--json"]).stdout) as Array<{
      params: Record<string, string>;
    }>;
    expect(run[0]?.params).toEqual({ who: "nobody", ...values });

    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    const attempt = await waitUntil("the task to finish", () => {
      const rows = JSON.parse(
        chronolog(dir, ["attempts", "p/a/echo/ALL", "--json"]).stdout || "[]",
      ) as AttemptRow[];
      const last = rows[rows.length - 1];
      return last && last.status !== "running" && last.status !== "queued" ? last : undefined;
    });
    expect(attempt.status).toBe("success");
    const expected = `${names.map((n) => `[${values[n]}]`).join("")}[nobody]`;
    expect(attempt.stdoutTail).toBe(expected);
    expect(chronolog(dir, ["attempts", "p/a/echo/ALL", "--output"]).stdout).toContain(`stdout:\n${expected}`);
    for (let n = 1; n <= 6; n++) expect(existsSync(marker(n)), marker(n)).toBe(false);
  }, 60_000);
});
