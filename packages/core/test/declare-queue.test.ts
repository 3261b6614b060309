import {
  type DeclarationResult,
  diffTaskSpecs,
  formatDeclarationIssue,
  parseDeclarationText,
  type TaskSpec,
  validateDeclarations,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { taskSpec } from "./support/events.js";

/**
 * `queue: NAME` on a task or a workflow: given declaration files, when they are validated,
 * then each task's spec carries its queue (its own, else its workflow's), or the file is
 * refused at the field and line of a bad name.
 */

const WORKFLOW = (workflowQueue: string, taskQueue: string) => `
workflows:
  - name: training
    project: ml
    account: acme
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
${workflowQueue}
    tasks:
      - name: features
        operator: { type: noop }
      - name: train
        operator: { type: noop }
${taskQueue}
tasks:
  - project: ml
    account: acme
    name: report
    cron: "0 3 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
    queue: reports
  - project: ml
    account: acme
    name: plain
    cron: "0 3 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
`;

function validate(text: string): DeclarationResult {
  return validateDeclarations([parseDeclarationText(text, { filename: "ml.yaml" })]);
}

function queues(result: DeclarationResult): Record<string, string | undefined> {
  if (!result.ok) throw new Error(result.errors.map(formatDeclarationIssue).join("\n"));
  return Object.fromEntries(result.tasks.map((t: TaskSpec) => [t.key.name, t.queue]));
}

describe("declaring queue: where a task's attempts run", () => {
  it("given a task's own queue, then its spec carries it; a task with none has none", () => {
    expect(queues(validate(WORKFLOW("", "")))).toEqual({
      features: undefined,
      train: undefined,
      report: "reports",
      plain: undefined,
    });
  });

  it("given a workflow's queue, then every task of it inherits it", () => {
    expect(queues(validate(WORKFLOW("    queue: cpu", "")))).toMatchObject({
      features: "cpu",
      train: "cpu",
      plain: undefined,
    });
  });

  it("given a task's queue in a workflow with one, then the task's own wins", () => {
    expect(queues(validate(WORKFLOW("    queue: cpu", "        queue: gpu")))).toMatchObject({
      features: "cpu",
      train: "gpu",
    });
  });

  it("given a bad queue name on a task, then the file is refused at the task's field, naming the task", () => {
    const text = WORKFLOW("", "        queue: GPU box");
    const result = validate(text);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(1);
    const [e] = result.errors;
    expect(e).toMatchObject({
      severity: "error",
      file: "ml.yaml",
      path: "workflows[0].tasks[1].queue",
      task: "ml/acme/train/ALL",
    });
    expect(e?.message).toMatch(/a queue name is lower-case letters/);
  });

  it("given a bad queue name on a workflow, then the file is refused at the workflow's field", () => {
    const result = validate(WORKFLOW("    queue: -gpu", ""));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => e.path)).toEqual(["workflows[0].queue"]);
    expect(formatDeclarationIssue(result.errors[0] as never)).toMatch(
      /^ml\.yaml: workflows\[0\]\.queue: .*queue name/,
    );
  });

  it("given a queue changed, added or dropped, then the diff names it", () => {
    expect(diffTaskSpecs(taskSpec("t", { queue: "cpu" }), taskSpec("t", { queue: "gpu" }))).toEqual([
      { field: "queue", from: "cpu", to: "gpu" },
    ]);
    expect(diffTaskSpecs(taskSpec("t"), taskSpec("t", { queue: "gpu" }))).toEqual([
      { field: "queue", from: undefined, to: "gpu" },
    ]);
    expect(diffTaskSpecs(taskSpec("t", { queue: "gpu" }), taskSpec("t"))).toEqual([
      { field: "queue", from: "gpu", to: undefined },
    ]);
  });
});
