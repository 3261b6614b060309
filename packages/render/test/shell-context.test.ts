import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OperatorSpec } from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  type RenderContext,
  renderOperator,
  renderTemplateWith,
  type ShellContext,
  scanShell,
  TemplateError,
  taskEnvironment,
  templateVariables,
} from "../src/index.js";

/** The context of each `@` of a command (each stands for a placeholder), in order. */
function contexts(command: string): ShellContext[] {
  const parts = command.split("@");
  const pieces = parts.flatMap((text, i) => (i === 0 ? [text] : [{ hole: i - 1 }, text]));
  const found = scanShell(pieces);
  return parts.slice(1).map((_, i) => found.get(i) as ShellContext);
}

describe("scanShell: where a placeholder stands", () => {
  it("plain words: arguments, words joined to text, redirections, several commands", () => {
    expect(contexts("echo @")).toEqual(["plain"]);
    expect(contexts("echo --day=@ x@y")).toEqual(["plain", "plain"]);
    expect(contexts("cat < @ > @; ls @ | wc && @ || (@) & { @; }")).toEqual(Array(6).fill("plain"));
    expect(contexts("case @ in a) echo @;; esac")).toEqual(["plain", "plain"]);
  });

  it("single quotes, with nothing special inside", () => {
    expect(contexts("echo '@'")).toEqual(["single_quotes"]);
    expect(contexts("sh -c 'echo @'")).toEqual(["single_quotes"]);
    expect(contexts("echo 'a\\' @")).toEqual(["plain"]); // a backslash does not escape in '...'
    expect(contexts("echo 'a\"b' @ '\"' @")).toEqual(["plain", "plain"]);
  });

  it("double quotes, with backslash escapes", () => {
    expect(contexts('echo "dq: @"')).toEqual(["double_quotes"]);
    expect(contexts('echo "a\\"b @"')).toEqual(["double_quotes"]); // \" does not close
    expect(contexts('echo "a\\\\" @')).toEqual(["plain"]); // \\ then " closes
    expect(contexts('echo "it\'s" @')).toEqual(["plain"]); // ' inside "..." is a letter
    expect(contexts('echo \\" @ \\"')).toEqual(["plain"]); // escaped quotes open nothing
    expect(contexts("echo \\' @")).toEqual(["plain"]);
  });

  it("$'...' quotes, with backslash escapes", () => {
    expect(contexts("echo $'a\\'b @'")).toEqual(["ansi_c_quotes"]);
    expect(contexts("echo $'a' @")).toEqual(["plain"]);
  });

  it("backquotes, alone and in double quotes", () => {
    expect(contexts("echo `echo @`")).toEqual(["backquotes"]);
    expect(contexts('echo "`echo @`"')).toEqual(["backquotes"]);
    expect(contexts("echo `a \\` @` @")).toEqual(["backquotes", "plain"]);
  });

  it("$(...) nested to any depth, with quotes and case patterns inside", () => {
    expect(contexts("echo $(echo @)")).toEqual(["command_substitution"]);
    expect(contexts("echo $(echo $(echo $(ls)) @) @")).toEqual(["command_substitution", "plain"]);
    expect(contexts('echo "$(echo @)"')).toEqual(["command_substitution"]);
    expect(contexts("echo $(echo ')' @) @")).toEqual(["command_substitution", "plain"]);
    expect(contexts("echo $(echo \\) @) @")).toEqual(["command_substitution", "plain"]);
    expect(contexts("echo $( (ls) ; echo @) @")).toEqual(["command_substitution", "plain"]);
    expect(contexts("x=$(case $y in a) echo a;; (b) echo b;; esac; echo @) @")).toEqual([
      "command_substitution",
      "plain",
    ]);
    expect(contexts("echo $(echo a # ) in a comment\n @) @")).toEqual(["command_substitution", "plain"]);
  });

  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${...}
  it("$((...)) and ${...}", () => {
    expect(contexts("echo $((1 + @)) @")).toEqual(["arithmetic", "plain"]);
    expect(contexts("echo $(( (1) + @ )) @")).toEqual(["arithmetic", "plain"]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${...}
    expect(contexts("echo ${x:-@} @")).toEqual(["parameter_expansion", "plain"]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${...}
    expect(contexts('echo ${x:-"}"} @ "${y:-@}"')).toEqual(["plain", "parameter_expansion"]);
  });

  it("here-documents: their body, unquoted, quoted or with <<-, and their delimiter", () => {
    expect(contexts("cat <<EOF\n@\nEOF\necho @")).toEqual(["here_document", "plain"]);
    expect(contexts("cat <<'EOF'\nit's @\nEOF\necho @")).toEqual(["here_document", "plain"]);
    expect(contexts('cat << "EOF"\n@\nEOF\necho @')).toEqual(["here_document", "plain"]);
    expect(contexts("cat <<\\EOF\n$(x) @\nEOF\necho @")).toEqual(["here_document", "plain"]);
    expect(contexts("cat <<-EOF\n\t@\n\tEOF\necho @")).toEqual(["here_document", "plain"]);
    // Without <<-, a tab-indented delimiter does not end the document.
    expect(contexts("cat <<EOF\n\tEOF\n@\nEOF\necho @")).toEqual(["here_document", "plain"]);
    // Two documents announced on one line are read one after the other.
    expect(contexts("cat <<A; cat <<B\n@\nA\n@\nB\n@")).toEqual(["here_document", "here_document", "plain"]);
    // A line continuation in an unquoted document: the next line is not its delimiter.
    expect(contexts("cat <<EOF\na\\\nEOF\n@\nEOF\n@")).toEqual(["here_document", "plain"]);
    expect(contexts("cat <<'EOF'\na\\\nEOF\n@")).toEqual(["plain"]);
    // A line with a placeholder never ends a document.
    expect(contexts("cat <<EOF\n@\nEOF")).toEqual(["here_document"]);
    expect(contexts("cat <<@\nx\n")).toEqual(["here_document_delimiter"]);
    // On the announcing line, after the delimiter, words are plain; <<< is no document.
    expect(contexts("cat <<EOF @\nx\nEOF")).toEqual(["plain"]);
    expect(contexts("cat <<< @\n@")).toEqual(["plain", "plain"]);
  });

  it("comments: to the end of the line, with quotes inside not read", () => {
    expect(contexts("echo a # @")).toEqual(["comment"]);
    expect(contexts("# it's\necho @")).toEqual(["plain"]);
    expect(contexts('echo a # "\necho @')).toEqual(["plain"]);
    expect(contexts("echo a#b @ $# @")).toEqual(["plain", "plain"]); // # within a word
  });

  it("right after a backslash or a lone $", () => {
    expect(contexts("echo \\@")).toEqual(["backslash"]);
    expect(contexts("echo \\\\@")).toEqual(["plain"]); // \\ is one escaped backslash
    expect(contexts("echo $@")).toEqual(["dollar"]);
    expect(contexts("echo a\\\n@")).toEqual(["plain"]); // a line continuation
  });

  it("never throws, whatever the text (unclosed quotes, stray parentheses)", () => {
    expect(contexts("echo 'open @")).toEqual(["single_quotes"]);
    expect(contexts("echo ) ) @ ((")).toEqual(["plain"]);
    expect(contexts("echo $(")).toEqual([]);
    expect(contexts("cat <<")).toEqual([]);
  });
});

const context: RenderContext = {
  task: { project: "sales", account: "acme", name: "orders", partition: "eu" },
  logicalDate: "2026-11-01T02:00:00.000Z",
  dataIntervalEnd: "2026-11-02T02:00:00.000Z",
  prevIntervalStart: null,
  config: { table: "enriched", db: { host: "w1" } },
  params: { note: "$(id)", "dry-run": "yes" },
};
const variables = templateVariables(context);

function refusal(command: string): TemplateError {
  try {
    renderTemplateWith(command, variables, "operator.command", { escaping: "shell" });
  } catch (e) {
    expect(e).toBeInstanceOf(TemplateError);
    return e as TemplateError;
  }
  throw new Error(`expected ${JSON.stringify(command)} to be refused`);
}

describe("a shell command's placeholders must stand in plain words", () => {
  it("refuses a quoted placeholder, at its line and column, with the variable to use", () => {
    const e = refusal('set -e\necho "dq: {{ params.note }}"');
    expect(e.problem).toBe("quoting");
    expect([e.line, e.column]).toEqual([2, 11]);
    expect(e.message).toBe(
      "operator.command: {{ params.note }} stands inside double quotes, where its value would not be one " +
        'quoted word and could run as shell code; use "$CHRONOLOG_PARAM_NOTE" instead (the same value, ' +
        "from the environment) (line 2, column 11)",
    );
    expect(refusal("sh -c 'echo {{ params.dry-run }}'").detail).toContain('use "$CHRONOLOG_PARAM_DRY_RUN"');
    expect(refusal("cat <<EOF\n{{ ds }}\nEOF").detail).toContain("in a here-document, where");
    expect(refusal("echo `date -d {{ ds }}`").detail).toContain("inside backquotes, where");
    expect(refusal("echo $(date -d {{ ds }})").detail).toContain('use "$CHRONOLOG_DS"');
    expect(refusal("echo '{{ config.table }}'").detail).toContain('use "$CHRONOLOG_CONFIG_TABLE"');
    expect(refusal("echo '{{ task.name }}'").detail).toContain('use "$CHRONOLOG_TASK_NAME"');
    expect(refusal('echo "{{ params.note | upcase }}"').detail).toContain("apply the filter in the shell");
    expect(refusal("echo '{{ config.db.host }}'").detail).toContain("move it out of there");
  });

  it("counts the other misplaced placeholders of the field", () => {
    expect(refusal("echo '{{ ds }}' \"{{ ts }}\" {{ ds }}").detail).toContain(
      "(and 1 more placeholder like it)",
    );
  });

  it("refuses a tag that stands anywhere but in plain words: a branch could open a quote", () => {
    const e = refusal("{% if params.note %}'{% else %}'{% endif %}{{ ds }}'");
    expect(e.detail).toMatch(/^the \{% else %\} tag stands inside single quotes/);
    expect(refusal('echo "{% echo params.note %}"').detail).toContain("{% echo params.note %} tag");
    expect(refusal("echo '{%- if true -%}x{% endif %}'").detail).toContain("inside single quotes");
  });

  it("sees whitespace control: a trimmed backslash still escapes the value's quote", () => {
    expect(refusal("echo \\ {{- params.note }}").detail).toContain("right after a backslash");
  });

  it("lets plain placeholders, tags, raw text and comments through", () => {
    const ok = (command: string) =>
      renderTemplateWith(command, variables, "operator.command", { escaping: "shell" });
    expect(ok("echo {{ params.note }} # done")).toBe("echo '$(id)' # done");
    expect(ok("{% if params.note %}echo {{ params.note }}{% endif %}")).toBe("echo '$(id)'");
    expect(ok("echo {% raw %}'{{ x }}'{% endraw %}")).toBe("echo '{{ x }}'");
    expect(ok("echo {% comment %}'{% endcomment %}{{ ds }}")).toBe("echo '2026-11-01'");
    expect(ok("echo \"$CHRONOLOG_PARAM_NOTE\" {{ params.note | default: 'x' }}")).toBe(
      "echo \"$CHRONOLOG_PARAM_NOTE\" '$(id)'",
    );
  });

  it("checks only the command: env values, cwd and other operators are data", () => {
    const op: OperatorSpec = {
      type: "shell",
      command: "echo {{ ds }}",
      env: { NOTE: "'{{ params.note }}'" },
      cwd: "/tmp/'{{ ds }}'",
    };
    expect(renderOperator(op, context)).toMatchObject({ env: { NOTE: "'$(id)'" } });
    const http: OperatorSpec = {
      type: "http",
      method: "POST",
      url: "http://x/'{{ ds }}'",
      headers: {},
      body: '{"note": "{{ params.note }}"}',
      timeoutSeconds: 5,
    } as OperatorSpec;
    expect(() => renderOperator(http, context)).not.toThrow();
    expect(() => renderOperator({ type: "shell", command: "echo '{{ ds }}'", env: {} }, context)).toThrow(
      /operator\.command: \{\{ ds \}\} stands inside single quotes/,
    );
  });
});

describe("taskEnvironment: every value a template reads, for the shell", () => {
  const env = taskEnvironment(context);

  it("names params, config keys and builtins", () => {
    expect(env).toMatchObject({
      CHRONOLOG_PARAM_NOTE: "$(id)",
      CHRONOLOG_PARAM_DRY_RUN: "yes",
      CHRONOLOG_CONFIG_TABLE: "enriched",
      CHRONOLOG_CONFIG_DB: '{"host":"w1"}',
      CHRONOLOG_DS: "2026-11-01",
      CHRONOLOG_DS_NODASH: "20261101",
      CHRONOLOG_TS: "2026-11-01T02:00:00+00:00",
      CHRONOLOG_TS_NODASH: "20261101T020000",
      CHRONOLOG_LOGICAL_DATE: "2026-11-01T02:00:00.000Z",
      CHRONOLOG_DATA_INTERVAL_START: "2026-11-01T02:00:00.000Z",
      CHRONOLOG_DATA_INTERVAL_END: "2026-11-02T02:00:00.000Z",
      CHRONOLOG_PREV_INTERVAL_START: "",
      CHRONOLOG_TASK_PROJECT: "sales",
      CHRONOLOG_TASK_ACCOUNT: "acme",
      CHRONOLOG_TASK_NAME: "orders",
      CHRONOLOG_TASK_PARTITION: "eu",
    });
  });

  it("refuses a value with a NUL byte, which no process can be given", () => {
    expect(() => taskEnvironment({ ...context, params: { note: "a\u0000b" } })).toThrow(
      "environment: CHRONOLOG_PARAM_NOTE: the value contains a NUL byte",
    );
  });

  it("leaves out names that clash, rather than pick one", () => {
    const clash = taskEnvironment({ ...context, params: { "a-b": "1", a_b: "2", c: "3" } });
    expect(clash.CHRONOLOG_PARAM_A_B).toBeUndefined();
    expect(clash.CHRONOLOG_PARAM_C).toBe("3");
  });

  it('a value used as "$VAR" in quotes, a here-document or $(...) stays data', () => {
    const command = [
      'printf "dq: %s\\n" "$CHRONOLOG_PARAM_NOTE"',
      "cat <<EOF",
      "doc: $CHRONOLOG_PARAM_NOTE",
      "EOF",
      'echo "cs: $(printf %s "$CHRONOLOG_PARAM_NOTE")"',
    ].join("\n");
    const out = execFileSync("/bin/sh", ["-c", command], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, ...env },
    });
    expect(out).toBe("dq: $(id)\ndoc: $(id)\ncs: $(id)\n");
  });
});

describe("what passes the check cannot run a value as code", () => {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-quoting-"));
  const marker = join(dir, "ran");
  const hostile = [
    `$(touch ${marker})`,
    `\`touch ${marker}\``,
    `'; touch ${marker}; '`,
    `"; touch ${marker}; "`,
    `x\nEOF\ntouch ${marker}\n`,
    `\\`,
    `a'\\''b; touch ${marker}`,
    `)\ntouch ${marker}\n(`,
  ];
  const commands = [
    "echo {{ params.v }} >/dev/null",
    "echo x{{ params.v }}y >/dev/null # it's a comment",
    "cat >/dev/null <<EOF\nit's\nEOF\nprintf %s {{ params.v }} >/dev/null",
    "{% if params.v %}echo {{ params.v }}{% else %}echo none{% endif %} >/dev/null",
    "for w in {{ params.v }} {{ params.v | upcase }}; do :; done",
    'echo "$CHRONOLOG_PARAM_V" $(echo "$CHRONOLOG_PARAM_V") {{ params.v }} >/dev/null',
  ];

  it("for every hostile value, in every command the check lets through", () => {
    for (const v of hostile) {
      const vars = templateVariables({ ...context, params: { v } });
      for (const command of commands) {
        const rendered = renderTemplateWith(command, vars, "operator.command", { escaping: "shell" });
        execFileSync("/bin/sh", ["-c", rendered], {
          env: { PATH: process.env.PATH, CHRONOLOG_PARAM_V: v },
          stdio: "ignore",
        });
        expect(existsSync(marker), `${JSON.stringify(v)} in ${JSON.stringify(command)}`).toBe(false);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
});
