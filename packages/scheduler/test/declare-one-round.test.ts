import { parseDeclarationText, SchedulerProjection, ValidationError } from "@chronolog/core";
import { checkDeclaration } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";

/**
 * Declaring checks the templates with the real renderer in the same round as everything else:
 * a file with problems of every kind is refused once, naming all of them.
 */

const NOW = Date.parse("2026-11-30T10:00:00.000Z");

/** The issues `checkDeclaration` refuses `text` with, as `path: message` lines. */
function refusal(text: string): string[] {
  const source = parseDeclarationText(text, { filename: "team.yaml" });
  let caught: unknown;
  try {
    checkDeclaration(new SchedulerProjection(), [source], NOW);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  return (caught as ValidationError).issues.map((i) => `${i.path}: ${i.message}`);
}

const task = (name: string, fields: string) =>
  `  - { project: p, account: a, name: ${name}, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, ${fields} }\n`;

describe("declare: templates in the same round as the other problems", () => {
  it("schema, parent, cycle and template problems of one file are refused together", () => {
    const text =
      "workflows:\n" +
      '  - name: etl\n    project: p\n    account: a\n    cron: "0 2 * * *"\n    startDate: 2026-11-01T00:00:00Z\n' +
      "    params: { region: eu }\n" +
      "    tasks:\n" +
      '      - { name: load, operator: { type: shell, command: "load {{ params.region }} {{ params.zone }}" } }\n' +
      "tasks:\n" +
      task("broken", "colour: red, operator: { type: noop }") +
      task("a", 'parents: [p/a/b, "bad/key/with/too/many"], operator: { type: noop }') +
      task("b", 'parents: [p/a/a], operator: { type: shell, command: "echo {{ dss }}" }') +
      task(
        "c",
        'cacheKey: "{{ ds", operator: { type: shell, command: "echo {{ ds }}" }, alerts: [ { command: "echo {{ alert.knd }}" } ]',
      );
    const issues = refusal(text);
    expect(issues).toEqual([
      'team.yaml: tasks[0].colour: p/a/broken/ALL: unknown field "colour"',
      expect.stringMatching(/^team\.yaml: tasks\[1\]\.parents\[1\]: p\/a\/a\/ALL: parent /),
      expect.stringMatching(
        /^team\.yaml: tasks\[2\]\.parents\[0\]: p\/a\/b\/ALL: dependency cycle .*: p\/a\/a\/ALL -> p\/a\/b\/ALL -> p\/a\/a\/ALL$/,
      ),
      expect.stringMatching(
        /^team\.yaml: workflows\[0\]\.tasks\[0\]\.operator\.command: p\/a\/load\/ALL: undefined param "params\.zone".* \(line 1, column \d+\)$/,
      ),
      expect.stringMatching(
        /^team\.yaml: tasks\[2\]\.operator\.command: p\/a\/b\/ALL: undefined variable "dss" \(line 1, column \d+\)$/,
      ),
      expect.stringMatching(/^team\.yaml: tasks\[3\]\.cacheKey: p\/a\/c\/ALL: /),
      expect.stringMatching(
        /^team\.yaml: tasks\[3\]\.alerts\[0\]\.command: p\/a\/c\/ALL: undefined variable "alert\.knd"/,
      ),
    ]);
  });
});
