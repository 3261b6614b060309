import {
  parseDeclarationText,
  SchedulerProjection,
  ValidationError,
  validateDeclarations,
} from "@chronolog/core";
import { checkDeclaration } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";

/** Secrets are declared by reference, and written only where they may be. */

const NOW = Date.parse("2026-11-30T10:00:00.000Z");

function check(text: string) {
  const source = parseDeclarationText(text.startsWith("  - ") ? `tasks:\n${text}` : text, {
    filename: "s.yaml",
  });
  return checkDeclaration(new SchedulerProjection(), [source], NOW);
}

function refusal(text: string): string[] {
  let caught: unknown;
  try {
    check(text);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  return (caught as ValidationError).issues.map((i) => `${i.path}: ${i.message}`);
}

const task = (name: string, fields: string) =>
  `  - { project: p, account: a, name: ${name}, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, ${fields} }\n`;

describe("declare: secrets", () => {
  it("a task takes its connection's, its workflow's and its own secrets, nearest first", () => {
    const text =
      "connections:\n  - { name: api, secrets: { CONN: { env: CONN_TOKEN }, SHARED: { env: FROM_CONN } } }\n" +
      "workflows:\n" +
      '  - name: etl\n    project: p\n    account: a\n    cron: "0 2 * * *"\n    startDate: 2026-11-01T00:00:00Z\n' +
      "    connection: api\n" +
      "    secrets: { SHARED: { file: /run/secrets/shared }, WF: { command: 'pass show wf' } }\n" +
      "    tasks:\n" +
      "      - name: call\n" +
      "        secrets: { OWN: { env: OWN_TOKEN } }\n" +
      '        operator: { type: http, method: POST, url: "http://127.0.0.1/x", headers: { Authorization: "Bearer {{ secrets.OWN }}" }, body: "{{ secrets.WF }}" }\n';
    const out = check(text);
    const valid = validateDeclarations([parseDeclarationText(text, { filename: "s.yaml" })], {});
    const spec = valid.ok ? valid.tasks.find((t) => t.key.name === "call") : undefined;
    expect(spec?.secrets).toEqual({
      CONN: { env: "CONN_TOKEN" },
      SHARED: { file: "/run/secrets/shared" },
      WF: { command: "pass show wf" },
      OWN: { env: "OWN_TOKEN" },
    });
    expect(out.warnings).toEqual([]);
  });

  it("refuses a bad name, a CHRONOLOG_ name and a source that is not one of env, file, command", () => {
    const issues = refusal(
      task("a", 'secrets: { "1BAD": { env: X } }, operator: { type: noop }') +
        task("b", "secrets: { CHRONOLOG_TOKEN: { env: X } }, operator: { type: noop }") +
        task("c", "secrets: { OK: { vault: x } }, operator: { type: noop }") +
        task("d", "secrets: { K: { env: CHRONOLOG_KAFKA_PASSWORD } }, operator: { type: noop }"),
    );
    expect(issues.join("\n")).toMatch(/tasks\[3\]\.secrets\.K\.env: .*Chronolog's own settings/);
    expect(issues.join("\n")).toMatch(/tasks\[0\]\.secrets\.1BAD.*environment variable's name/);
    expect(issues.join("\n")).toMatch(/tasks\[1\]\.secrets\.CHRONOLOG_TOKEN.*must not start with CHRONOLOG_/);
    expect(issues.join("\n")).toMatch(
      /tasks\[2\]\.secrets\.OK: .*one of \{ env: VAR \}, \{ file: PATH \} or \{ command/,
    );
  });

  it("refuses a secret in a shell command, naming the field and the variable to use", () => {
    const issues = refusal(
      task(
        "a",
        'secrets: { TOKEN: { env: T } }, operator: { type: shell, command: "curl -H {{ secrets.TOKEN }} x" }',
      ),
    );
    expect(issues).toEqual([
      expect.stringMatching(
        /tasks\[0\]\.operator\.command: .*secrets cannot be written into a shell command: the task finds each in its environment \(use "\$TOKEN"\)/,
      ),
    ]);
  });

  it("refuses a secret in a URL, node args, a cache key, and an undeclared or filtered secret", () => {
    const issues = refusal(
      task("a", 'secrets: { T: { env: T } }, operator: { type: http, url: "http://h/?k={{ secrets.T }}" }') +
        task(
          "b",
          'secrets: { T: { env: T } }, operator: { type: node, module: m.js, args: { k: "{{ secrets.T }}" } }',
        ) +
        task("c", 'secrets: { T: { env: T } }, cacheKey: "{{ secrets.T }}", operator: { type: noop }') +
        task("d", 'operator: { type: http, url: "http://h/", headers: { X-Key: "{{ secrets.NOPE }}" } }') +
        task(
          "e",
          'secrets: { T: { env: T } }, operator: { type: http, url: "http://h/", body: "{{ secrets.T | upcase }}" }',
        ),
    ).join("\n");
    expect(issues).toMatch(
      /tasks\[0\]\.operator\.url: .*only into an http operator's headers and body, not operator\.url/,
    );
    expect(issues).toMatch(/tasks\[1\]\.operator\.args\.k: .*not operator\.args\.k/);
    expect(issues).toMatch(/tasks\[2\]\.cacheKey: .*not cacheKey/);
    expect(issues).toMatch(/tasks\[3\]\.operator\.headers\.X-Key: .*undefined variable "secrets\.NOPE"/);
    expect(issues).toMatch(/tasks\[4\]\.operator\.body: .*with no filter/);
  });

  it("warns of a credential written literally, naming the field", () => {
    const out = check(
      task(
        "a",
        'operator: { type: http, url: "https://bob:hunter22@h/x", headers: { Authorization: "Bearer abc123" } }',
      ) +
        task("b", 'operator: { type: shell, command: "psql postgres://app:pw1234@db/x -c 1" }') +
        task(
          "c",
          'secrets: { T: { env: T } }, operator: { type: http, url: "http://h/", headers: { Authorization: "Bearer {{ secrets.T }}" } }',
        ),
    );
    expect(out.warnings.map((w) => `${w.path}: ${w.message}`)).toEqual([
      expect.stringMatching(/tasks\[0\]\.operator\.url: .*password in a URL/),
      expect.stringMatching(/tasks\[0\]\.operator\.headers\.Authorization: .*carries a credential literally/),
      expect.stringMatching(/tasks\[1\]\.operator\.command: .*password in a URL/),
    ]);
  });
});
