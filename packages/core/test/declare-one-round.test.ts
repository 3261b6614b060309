import {
  type DeclarationIssue,
  type ExistingDeclarations,
  formatDeclarationIssue,
  parseDeclarationText,
  type TemplateCheck,
  validateDeclarations,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { DAY, declaredTask, keyOf, taskSpec } from "./support/events.js";
import { type Given, projectionOf, specification } from "./support/specification.js";

/**
 * One round: every problem of a set of declaration files is reported at once, each at its
 * field, as far as it means something. Given what is declared already (as events), when these
 * files are validated, then these issues.
 */

/** What is declared already, read from the projection as the scheduler reads it. */
function existingOf(history: readonly Given[]): ExistingDeclarations {
  const p = projectionOf(history);
  return {
    tasks: [...p.tasks.values()].map((t) => ({
      key: t.key,
      parents: t.parents,
      connection: t.spec.connection,
      operator: t.spec.operator,
    })),
    connections: p.connections.values(),
    workflows: p.workflows.values(),
  };
}

/** An issue as the tests compare it: what, where (in the template too), and which task. */
const brief = (i: DeclarationIssue) => ({
  code: i.code,
  at: `${i.file}: ${i.path}`,
  ...(i.task ? { task: i.task } : {}),
  ...(i.line !== undefined ? { line: i.line, column: i.column } : {}),
});

/**
 * A stand-in for the renderer (the core renders nothing): a shell command's `{{ name }}` is
 * refused unless the name is `ds` or a declared param of the task's workflow.
 */
const checkTemplates: TemplateCheck = (spec, params) => {
  if (spec.operator.type !== "shell") return [];
  const command = spec.operator.command;
  return [...command.matchAll(/\{\{\s*(\w+)\s*\}\}/g)]
    .filter((m) => m[1] !== "ds" && !Object.hasOwn(params, m[1] as string))
    .map((m) => ({
      field: "operator.command",
      message: `undefined variable "${m[1]}"`,
      line: 1,
      column: (m.index ?? 0) + 1,
    }));
};

const spec = specification({
  fold: existingOf,
  decide: (existing, files: ReadonlyArray<{ name: string; text: string }>) => {
    const result = validateDeclarations(
      files.map((f) => parseDeclarationText(f.text, { filename: f.name })),
      existing,
      { checkTemplates },
    );
    return {
      errors: result.ok ? [] : result.errors.map(brief),
      warnings: result.warnings.map(brief),
    };
  },
});

/**
 * A standalone task of project p, account a, from 2026-11-01, a daily noop unless `cron` or
 * `operator` say otherwise; `extra` is more YAML flow fields.
 */
const task = (name: string, extra = "", o: { cron?: string; operator?: string } = {}) =>
  `  - { project: p, account: a, name: ${name}, cron: "${o.cron ?? "0 2 * * *"}", startDate: 2026-11-01T00:00:00Z, operator: ${o.operator ?? "{ type: noop }"}${extra ? `, ${extra}` : ""} }\n`;

describe("validateDeclarations: every problem of a file in one round", () => {
  it("schema, value, reference and cycle problems of one file are all reported, each at its field", () => {
    const text =
      "connections:\n" +
      "  - { name: warehouse, operators: [shell], maxParalelism: 2 }\n" +
      "workflows:\n" +
      '  - { name: etl, project: p, account: a, crom: "0 2 * * *", tasks: [ { name: extract, operator: { type: shell } } ] }\n' +
      "tasks:\n" +
      task("broken", "retires: 3") +
      task("late", "parents: [other/team/later]", { cron: "0 25 * * *" }) +
      task("a", "parents: [p/a/b], connection: nowhere") +
      task("b", 'parents: [p/a/a], alerts: [ { command: "true", http: { url: "http://x/" } } ]');
    spec
      .given()
      .when([{ name: "team.yaml", text }])
      .then({
        errors: [
          // The shape of each item: a broken one hides none of its neighbours.
          { code: "unknown_field", at: "team.yaml: connections[0].maxParalelism" },
          { code: "unknown_field", at: "team.yaml: workflows[0].crom" },
          {
            code: "required",
            at: "team.yaml: workflows[0].tasks[0].operator.command",
            task: "p/a/extract/ALL",
          },
          { code: "unknown_field", at: "team.yaml: tasks[0].retires", task: "p/a/broken/ALL" },
          // Each well-shaped task, resolved.
          { code: "cron", at: "team.yaml: tasks[1].cron", task: "p/a/late/ALL" },
          { code: "connection_unknown", at: "team.yaml: tasks[2].connection", task: "p/a/a/ALL" },
          { code: "schema", at: "team.yaml: tasks[3].alerts[0]", task: "p/a/b/ALL" },
          // The graph, with the tasks that have problems of their own.
          { code: "cycle", at: "team.yaml: tasks[3].parents[0]", task: "p/a/b/ALL" },
        ],
        warnings: [{ code: "parent_missing", at: "team.yaml: tasks[1].parents[0]", task: "p/a/late/ALL" }],
      });
  });

  it("a cycle through what is declared already is found though the new task has other problems", () => {
    const x = taskSpec("x", { parents: [keyOf("t")] });
    spec
      .given(declaredTask("x", DAY, x))
      .when([{ name: "t.yaml", text: `tasks:\n${task("t", "timezone: Mars/Olympus, parents: [p/a/x]")}` }])
      .then({
        errors: [
          { code: "timezone", at: "t.yaml: tasks[0].timezone", task: "p/a/t/ALL" },
          { code: "cycle", at: "t.yaml: tasks[0].parents[0]", task: "p/a/t/ALL" },
        ],
        warnings: [],
      });
  });

  it("a task with a broken shape is not resolved, but its siblings are, and it is not 'missing'", () => {
    const text =
      "workflows:\n" +
      '  - name: etl\n    project: p\n    account: a\n    cron: "0 2 * * *"\n    startDate: 2026-11-01T00:00:00Z\n' +
      "    tasks:\n" +
      "      - { name: extract, colour: red, operator: { type: noop } }\n" +
      '      - { name: load, cron: "every day", parents: [extract], operator: { type: noop } }\n';
    spec
      .given()
      .when([{ name: "etl.yaml", text }])
      .then({
        errors: [
          { code: "unknown_field", at: "etl.yaml: workflows[0].tasks[0].colour", task: "p/a/extract/ALL" },
          { code: "cron", at: "etl.yaml: workflows[0].tasks[1].cron", task: "p/a/load/ALL" },
        ],
        warnings: [],
      });
  });

  it("the problems of several files come out together, file by file", () => {
    spec
      .given()
      .when([
        {
          name: "one.yaml",
          text: `tasks:\n${task("one", "parents: [p/a/two]", { operator: "{ type: nop }" })}`,
        },
        { name: "two.yaml", text: `tasks:\n${task("two", "parents: [p/a/one]")}` },
        { name: "three.yaml", text: `tasks:\n${task("three", "endDate: 2026-10-01T00:00:00Z")}` },
      ])
      .then({
        errors: [
          { code: "schema", at: "one.yaml: tasks[0].operator.type", task: "p/a/one/ALL" },
          { code: "date", at: "three.yaml: tasks[0].endDate", task: "p/a/three/ALL" },
          { code: "cycle", at: "two.yaml: tasks[0].parents[0]", task: "p/a/two/ALL" },
        ],
        warnings: [],
      });
  });

  it("templates of every task with a sound schedule are checked beside the file's other problems", () => {
    const shell = (command: string) => `{ type: shell, command: "${command}" }`;
    const text =
      "workflows:\n" +
      '  - name: etl\n    project: p\n    account: a\n    cron: "0 2 * * *"\n    startDate: 2026-11-01T00:00:00Z\n' +
      "    params: { region: eu }\n" +
      "    tasks:\n" +
      `      - { name: load, operator: ${shell("load {{ region }} {{ regoin }}")} }\n` +
      "tasks:\n" +
      task("shapeless", "colour: red", { operator: shell("echo {{ nope }}") }) +
      task("unconnected", "connection: nowhere", { operator: shell("echo {{ dss }}") }) +
      task("unscheduled", "", { cron: "0 99 * * *", operator: shell("echo {{ nope }}") });
    spec
      .given()
      .when([{ name: "mixed.yaml", text }])
      .then({
        errors: [
          { code: "unknown_field", at: "mixed.yaml: tasks[0].colour", task: "p/a/shapeless/ALL" },
          { code: "connection_unknown", at: "mixed.yaml: tasks[1].connection", task: "p/a/unconnected/ALL" },
          { code: "cron", at: "mixed.yaml: tasks[2].cron", task: "p/a/unscheduled/ALL" },
          // The templates last: the workflow's params are visible to its task.
          {
            code: "template",
            at: "mixed.yaml: workflows[0].tasks[0].operator.command",
            task: "p/a/load/ALL",
            line: 1,
            column: 19,
          },
          {
            code: "template",
            at: "mixed.yaml: tasks[1].operator.command",
            task: "p/a/unconnected/ALL",
            line: 1,
            column: 6,
          },
        ],
        warnings: [],
      });
  });

  it("a template problem reads like every other: file, field, task, message, line and column", () => {
    const text = `tasks:\n${task("t", "", { operator: '{ type: shell, command: "echo {{ dss }}" }' })}`;
    const result = validateDeclarations(
      [parseDeclarationText(text, { filename: "t.yaml" })],
      {},
      {
        checkTemplates,
      },
    );
    expect(result.ok ? [] : result.errors.map(formatDeclarationIssue)).toEqual([
      't.yaml: tasks[0].operator.command: p/a/t/ALL: undefined variable "dss" (line 1, column 6)',
    ]);
  });

  it("a task with a wrong parent keeps its other parents in the graph: a cycle through them is found", () => {
    spec
      .given()
      .when([
        {
          name: "loop.yaml",
          text: `tasks:\n${task("a", "parents: [p/a/b, too/many/parts/of/a/key]")}${task("b", "parents: [p/a/a]")}`,
        },
      ])
      .then({
        errors: [
          { code: "parent", at: "loop.yaml: tasks[0].parents[1]", task: "p/a/a/ALL" },
          { code: "cycle", at: "loop.yaml: tasks[1].parents[0]", task: "p/a/b/ALL" },
        ],
        warnings: [],
      });
  });
});
