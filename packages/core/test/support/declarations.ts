/*
 * What the declaration tests share: a full example document and small helpers that validate a
 * document and take its result apart.
 */
import {
  type DeclarationIssue,
  type DeclarationResult,
  type ExistingDeclarations,
  formatDeclarationIssue,
  parseDeclarationText,
  type TaskSpec,
  validateDeclarations,
} from "../../src/index.js";

export const ORDERS_YAML = `
connections:
  - name: warehouse
    operators: [shell, noop]
    maxParallelism: 4
workflows:
  - name: orders
    project: sales
    account: acme
    cron: "0 2 * * *"
    timezone: UTC
    startDate: 2026-11-01T00:00:00Z
    config: { region: eu, db: { host: w1, port: 5432 } }
    retry: { maxAttempts: 3, initialDelayMs: 500 }
    failurePolicy: skip_dependents
    tasks:
      - name: orders_enriched
        operator: { type: shell, command: "echo {{ ds }}", config: { table: inline_table } }
        connection: warehouse
        parents: [ "ingest/acme/orders_raw" ]
        retry: { maxAttempts: 5 }
        idempotent: true
        config: { table: enriched, db: { port: 6543 } }
      - name: orders_daily_report
        cron: "0 3 * * *"
        timezone: Europe/Paris
        operator: { type: noop }
        parents: [ orders_enriched, { project: ingest, account: acme, name: orders_raw, partition: ALL } ]
tasks:
  - project: ingest
    account: acme
    name: orders_raw
    cron: "0 2 * * *"
    startDate: 2026-11-01T00:00:00Z
    operator: { type: noop }
`;

export function yamlDoc(text: string, filename = "decl.yaml") {
  return parseDeclarationText(text, { filename });
}

export function validate(
  docs: Array<{ filename: string; document: unknown }>,
  existing?: ExistingDeclarations,
) {
  return validateDeclarations(docs, existing);
}

/** A one-task document with a standalone task; `extra` is merged into the task. */
export function standalone(extra: Record<string, unknown>, filename = "t.yaml") {
  return {
    filename,
    document: {
      tasks: [
        {
          project: "p",
          account: "a",
          name: "t",
          cron: "0 2 * * *",
          startDate: "2026-11-01T00:00:00Z",
          operator: { type: "noop" },
          ...extra,
        },
      ],
    },
  };
}

export function errorsOf(result: DeclarationResult): DeclarationIssue[] {
  if (result.ok) throw new Error(`expected errors, got ok with ${result.tasks.length} tasks`);
  return result.errors;
}

export function okOf(result: DeclarationResult) {
  if (!result.ok) throw new Error(result.errors.map(formatDeclarationIssue).join("\n"));
  return result;
}

export function taskNamed(tasks: TaskSpec[], name: string): TaskSpec {
  const t = tasks.find((x) => x.key.name === name);
  if (!t) throw new Error(`no task ${name}`);
  return t;
}
