import { describe, expect, it } from "vitest";
import { type DeclarationResult, parseDeclarationText, validateDeclarations } from "../src/index.js";

/** Declaring an outside task (`operator: { type: external }`): what it takes, and what it refuses. */
const CONNECTION = `connections:
  - { name: drop, operators: [shell], maxParallelism: 1 }
`;
const check = (text: string): DeclarationResult =>
  validateDeclarations([parseDeclarationText(text, { filename: "d.yaml" })]);
const messages = (r: DeclarationResult): string[] =>
  r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);

describe("an external task's declaration", () => {
  it("is a task of its own, with a schedule and no more", () => {
    const r = check(`tasks:
  - { project: vendor, account: acme, name: prices, cron: "0 0 * * *", startDate: 2026-12-01T00:00:00Z, operator: { type: external } }
  - { project: sales, account: acme, name: uses, cron: "0 0 * * *", startDate: 2026-12-01T00:00:00Z, parents: [vendor/acme/prices], operator: { type: noop } }
`);
    expect(messages(r)).toEqual([]);
    expect(r.ok && r.tasks[0]?.operator).toEqual({ type: "external" });
  });

  it("takes no connection and no queue: each is an error where it is written", () => {
    const r = check(`${CONNECTION}tasks:
  - { project: vendor, account: acme, name: prices, cron: "0 0 * * *", startDate: 2026-12-01T00:00:00Z, connection: drop, queue: io, operator: { type: external } }
`);
    expect(messages(r)).toEqual([
      "tasks[0].connection: vendor/acme/prices/ALL: an external task is never run by Chronolog: it takes no connection (its intervals are reported with chronolog report)",
      "tasks[0].queue: vendor/acme/prices/ALL: an external task is never run by Chronolog: it takes no queue (its intervals are reported with chronolog report)",
    ]);
  });

  it("is not a workflow's task", () => {
    const r = check(`workflows:
  - name: w
    project: vendor
    account: acme
    cron: "0 0 * * *"
    startDate: 2026-12-01T00:00:00Z
    tasks:
      - { name: prices, operator: { type: external } }
`);
    expect(messages(r).join("\n")).toContain(
      "an external task is declared on its own (under tasks:), not in a workflow",
    );
  });

  it("has no fields of its own", () => {
    const r = check(`tasks:
  - { project: vendor, account: acme, name: prices, cron: "0 0 * * *", startDate: 2026-12-01T00:00:00Z, operator: { type: external, command: "true" } }
`);
    expect(messages(r).join("\n")).toMatch(/operator/);
    expect(r.ok).toBe(false);
  });
});
