import { execFileSync } from "node:child_process";
import { homedir } from "node:os";
import type { OperatorSpec } from "@chronolog/core";
import { ChronologError } from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  type RenderContext,
  renderOperator,
  renderTemplate,
  shellQuote,
  TemplateError,
  templateVariables,
} from "../src/index.js";

const context: RenderContext = {
  task: { project: "sales", account: "acme", name: "orders_enriched", partition: "eu" },
  logicalDate: "2026-11-01T02:00:00.000Z",
  dataIntervalEnd: "2026-11-02T02:00:00.000Z",
  prevIntervalStart: "2026-10-31T02:00:00.000Z",
  config: {
    table: "enriched",
    db: { host: "w1", port: 5432 },
    tables: ["a", "b"],
    base: "https://api.internal",
  },
  params: { note: "it's $(rm -rf /)" },
};

const shell = (
  command: string,
  extra: Partial<Extract<OperatorSpec, { type: "shell" }>> = {},
): OperatorSpec => ({
  type: "shell",
  command,
  env: {},
  ...extra,
});

function commandOf(op: OperatorSpec): string {
  if (op.type !== "shell") throw new Error("not a shell operator");
  return op.command;
}

function renderError(fn: () => unknown): TemplateError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(TemplateError);
    return e as TemplateError;
  }
  throw new Error("expected a TemplateError");
}

/** Runs `printf %s <word>` through /bin/sh and returns what the shell passed to printf. */
function throughShell(word: string): string {
  return execFileSync("/bin/sh", ["-c", `printf %s ${word}`], { encoding: "utf8" });
}

describe("builtins", () => {
  it("derives ds, ts and the interval from the logical date", () => {
    const v = templateVariables(context);
    expect(v).toMatchObject({
      ds: "2026-11-01",
      ds_nodash: "20261101",
      ts: "2026-11-01T02:00:00+00:00",
      ts_nodash: "20261101T020000",
      logical_date: "2026-11-01T02:00:00.000Z",
      data_interval_start: "2026-11-01T02:00:00.000Z",
      data_interval_end: "2026-11-02T02:00:00.000Z",
      prev_interval_start: "2026-10-31T02:00:00.000Z",
      task: { project: "sales", account: "acme", name: "orders_enriched", partition: "eu" },
    });
    const out = renderOperator(
      shell(
        "run {{ ds | raw }} {{ ds_nodash | raw }} {{ ts | raw }} {{ logical_date | raw }} " +
          "{{ data_interval_start | raw }} {{ data_interval_end | raw }} {{ prev_interval_start | raw }} " +
          "{{ task.project | raw }}/{{ task.name | raw }}/{{ task.partition | raw }}",
      ),
      context,
    );
    expect(commandOf(out)).toBe(
      "run 2026-11-01 20261101 2026-11-01T02:00:00+00:00 2026-11-01T02:00:00.000Z 2026-11-01T02:00:00.000Z " +
        "2026-11-02T02:00:00.000Z 2026-10-31T02:00:00.000Z sales/orders_enriched/eu",
    );
  });

  it("renders a missing prev_interval_start as empty, testable with if", () => {
    const first = { ...context, prevIntervalStart: null };
    expect(renderTemplate("[{{ prev_interval_start }}]", first)).toBe("[]");
    expect(renderTemplate("{% if prev_interval_start %}again{% else %}first{% endif %}", first)).toBe(
      "first",
    );
  });

  it("puts ds and ts in the task's time zone and keeps instants in UTC", () => {
    const tokyo = { ...context, logicalDate: "2026-10-31T17:00:00.000Z", timezone: "Asia/Tokyo" };
    expect(renderTemplate("{{ ds }} {{ ts }} {{ logical_date }}", tokyo)).toBe(
      "2026-11-01 2026-11-01T02:00:00+09:00 2026-10-31T17:00:00.000Z",
    );
    const ny = { ...context, logicalDate: "2026-11-01T05:30:00.000Z", timezone: "America/New_York" };
    expect(renderTemplate("{{ ts }} {{ ts_nodash }}", ny)).toBe("2026-11-01T01:30:00-04:00 20261101T013000");
    // The date filter formats in the task's zone too, not the host's.
    expect(renderTemplate('{{ logical_date | date: "%Y-%m-%d %H:%M" }}', tokyo)).toBe("2026-11-01 02:00");
  });

  it("refuses the clock: the date filters do not take now/today", () => {
    const e = renderError(() => renderTemplate('{{ "now" | date: "%Y" }}', context, "operator.url"));
    expect(e.field).toBe("operator.url");
    expect(e.message).toContain("logical date");
  });

  it("rejects an invalid context with a TemplateError", () => {
    expect(renderError(() => templateVariables({ ...context, logicalDate: "yesterday" })).problem).toBe(
      "context",
    );
    expect(renderError(() => templateVariables({ ...context, timezone: "Mars/Base" })).field).toBe(
      "context.timezone",
    );
  });
});

describe("config and params", () => {
  it("reads merged config and params", () => {
    expect(renderTemplate("{{ config.table }}@{{ config.db.host }}:{{ config.db.port }}", context)).toBe(
      "enriched@w1:5432",
    );
    expect(renderTemplate("{{ config.tables | join: ',' }} {{ config.tables[1] }}", context)).toBe("a,b b");
    expect(renderTemplate("{{ params.note }}", context)).toBe("it's $(rm -rf /)");
  });

  it("renders objects and arrays as JSON", () => {
    expect(renderTemplate("{{ config.db }} {{ config.tables }}", context)).toBe(
      '{"host":"w1","port":5432} ["a","b"]',
    );
  });

  it("lets a template test an optional value with default and if", () => {
    expect(renderTemplate('{{ config.missing | default: "fallback" }}', context)).toBe("fallback");
    expect(renderTemplate("{% if params.dry_run %}--dry-run{% endif %}", context)).toBe("");
  });

  it("renders every templated field of each operator and nothing else", () => {
    const http: OperatorSpec = {
      type: "http",
      method: "POST",
      url: "https://api/{{ config.table }}?d={{ ds }}",
      headers: { "X-Day": "{{ ds_nodash }}", Plain: "x" },
      body: '{"table": "{{ config.table }}"}',
    };
    expect(renderOperator(http, context)).toEqual({
      type: "http",
      method: "POST",
      url: "https://api/enriched?d=2026-11-01",
      headers: { "X-Day": "20261101", Plain: "x" },
      body: '{"table": "enriched"}',
    });
    const node: OperatorSpec = {
      type: "node",
      module: "./jobs/{{ ds }}.js",
      export: "run",
      args: {
        day: "{{ ds }}",
        nested: { list: ["{{ config.table }}", 3, { deep: "{{ task.name }}" }] },
        n: 1,
      },
    };
    expect(renderOperator(node, context)).toEqual({
      type: "node",
      module: "./jobs/{{ ds }}.js",
      export: "run",
      args: { day: "2026-11-01", nested: { list: ["enriched", 3, { deep: "orders_enriched" }] }, n: 1 },
    });
    const sh = shell("echo {{ ds }}", { cwd: "/data/{{ ds }}", env: { DAY: "{{ ds }}" } });
    expect(renderOperator(sh, context)).toEqual({
      type: "shell",
      command: "echo '2026-11-01'",
      cwd: "/data/2026-11-01",
      env: { DAY: "2026-11-01" },
    });
    expect(renderOperator({ type: "noop" }, context)).toEqual({ type: "noop" });
  });

  it("does not modify the operator it renders", () => {
    const op = shell("echo {{ ds }}", { env: { A: "{{ ds }}" } });
    const copy = structuredClone(op);
    renderOperator(op, context);
    expect(op).toEqual(copy);
  });

  it("leaves literal braces alone with raw", () => {
    expect(renderTemplate("{% raw %}{{ not_a_variable }}{% endraw %}", context)).toBe("{{ not_a_variable }}");
  });
});

describe("shell_quote", () => {
  const nasty = [
    "plain",
    "with spaces  and\ttabs",
    "it's",
    "''",
    "$(rm -rf /)",
    "`id`",
    "$HOME $" + "{HOME} \\n \\",
    "line one\nline two\n",
    "\"double\" and 'single'",
    "*?[glob]",
    ";& | > < #",
    "",
    "-n",
    "ünïcødé ☃",
  ];

  it("always wraps in single quotes, a quote becoming '\\''", () => {
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote("")).toBe("''");
    expect(shellQuote("$(rm -rf /)")).toBe("'$(rm -rf /)'");
    expect(shellQuote(null)).toBe("''");
    expect(shellQuote(42)).toBe("'42'");
  });

  it("round-trips any string through /bin/sh", () => {
    for (const value of nasty) expect(throughShell(shellQuote(value)), JSON.stringify(value)).toBe(value);
  });

  it("is available as a filter, quoting params in a rendered command that the shell then runs", () => {
    for (const value of nasty) {
      const command = commandOf(
        renderOperator(shell("printf %s {{ params.v | shell_quote }}"), { ...context, params: { v: value } }),
      );
      expect(execFileSync("/bin/sh", ["-c", command], { encoding: "utf8" }), JSON.stringify(value)).toBe(
        value,
      );
    }
  });

  it("refuses a NUL byte", () => {
    expect(() => shellQuote("a\u0000b")).toThrow(/NUL/);
    const e = renderError(() =>
      renderTemplate("{{ params.v | shell_quote }}", { ...context, params: { v: "a\u0000" } }),
    );
    expect(e.problem).toBe("render");
  });
});

describe("safe by default: the engine escapes every value in a command and a URL", () => {
  const injections = [
    "$(touch F)",
    "`touch F`",
    "; touch F",
    "\ntouch F",
    "a\ntouch F",
    "it's",
    "'; touch F; '",
    '"double" and "; touch F"',
    "--option",
    "--option=$(touch F)",
    "$HOME $" + "{HOME} * ? [x] | & > < #",
    "",
  ];

  const commandWith = (template: string, params: Record<string, string>) =>
    commandOf(renderOperator(shell(template), { ...context, params }));
  const run = (command: string) => execFileSync("/bin/sh", ["-c", command], { encoding: "utf8" });

  it.each(injections)("a param %j reaches the command as one literal word", (value) => {
    for (const template of [
      "printf %s {{ params.x }}",
      "printf %s {{ params.x | default: 'a' }}",
      "printf %s {{ params.x | shell_quote }}",
      "printf %s {{ params.x | append: '' }}",
      "{% assign v = params.x %}printf %s {{ v }}",
      "printf %s {% echo params.x %}",
    ]) {
      const command = commandWith(template, { x: value });
      const expected = template.includes("default") && value === "" ? "a" : value;
      expect(run(command), `${template} with ${JSON.stringify(value)}`).toBe(expected);
    }
  });

  it("quotes each output once: shell_quote as the last filter is not quoted again", () => {
    expect(commandWith("echo {{ params.x }}", { x: "it's" })).toBe("echo 'it'\\''s'");
    expect(commandWith("echo {{ params.x | shell_quote }}", { x: "it's" })).toBe("echo 'it'\\''s'");
    // Not the last filter: its output is a value like any other, quoted again.
    expect(run(commandWith("printf %s {{ params.x | shell_quote | append: '' }}", { x: "a b" }))).toBe(
      "'a b'",
    );
  });

  it("quotes builtins and config too; raw writes a value the declaration fixes as is", () => {
    expect(renderTemplate("x", context)).toBe("x");
    const op = renderOperator(
      shell("load {{ ds }} {{ config.table }} {{ ds | raw }} {% if ds %}--flag{% endif %}"),
      context,
    );
    expect(commandOf(op)).toBe("load '2026-11-01' 'enriched' 2026-11-01 --flag");
    expect(
      commandOf(
        renderOperator(shell("echo {{ prev_interval_start }}"), { ...context, prevIntervalStart: null }),
      ),
    ).toBe("echo ''");
  });

  it.each([
    "echo {{ params.note | raw }}",
    "echo {{ config.table | raw }} {{ params.note }}",
    "{% assign v = params.note %}echo {{ v | raw }}",
    "{% capture v %}{{ params.note }}{% endcapture %}echo {{ v | raw }}",
  ])("refuses raw in a command that reads params: %s", (template) => {
    const e = renderError(() => renderOperator(shell(template), context));
    expect(e).toMatchObject({ field: "operator.command", problem: "render" });
    expect(e.message).toContain("raw filter is not allowed in a template that reads params");
  });

  it("URL-encodes every value in an http URL, once", () => {
    const url = (template: string, params: Record<string, string>) => {
      const op = renderOperator(
        { type: "http", method: "GET", url: template, headers: {} },
        { ...context, params },
      );
      if (op.type !== "http") throw new Error("not http");
      return op.url;
    };
    expect(url("https://api/r?who={{ params.who }}&d={{ ts }}", { who: "a&admin=1#x /y" })).toBe(
      "https://api/r?who=a%26admin%3D1%23x%20%2Fy&d=2026-11-01T02%3A00%3A00%2B00%3A00",
    );
    expect(url("https://api/r?who={{ params.who | url_encode }}", { who: "a&b" })).toBe(
      "https://api/r?who=a%26b",
    );
    expect(url("{{ config.base | raw }}/r", { who: "x" })).toBe("https://api.internal/r");
    const e = renderError(() => url("{{ params.who | raw }}", { who: "x" }));
    expect(e.field).toBe("operator.url");
  });

  it("leaves env values, cwd, headers and body as they are", () => {
    const op = renderOperator(shell("true", { cwd: "/d/{{ params.x }}", env: { X: "{{ params.x }}" } }), {
      ...context,
      params: { x: "a b" },
    });
    expect(op).toMatchObject({ cwd: "/d/a b", env: { X: "a b" } });
  });

  it("refuses a param the workflow does not declare, even with default or if", () => {
    const strict = { ...context, params: { who: "nobody" }, declaredParams: ["who"] };
    expect(renderTemplate("{{ params.who }}", strict)).toBe("nobody");
    for (const template of [
      "{{ params.x }}",
      "{{ params.x | default: 'a' }}",
      "{% if params.x %}y{% endif %}",
    ]) {
      const e = renderError(() => renderTemplate(template, strict, "operator.command"));
      expect(e.message, template).toContain(
        'undefined param "params.x": the workflow does not declare it (its params are who)',
      );
      expect(e.line, template).toBe(1);
    }
  });
});

describe("sandbox: templates reach nothing but their context", () => {
  const home = homedir();
  const escapes = [
    '{{ range.constructor("return process.env.HOME")() }}',
    '{{ config.constructor.constructor("return process")() }}',
    '{{ config.constructor.constructor("return process.env.HOME")() }}',
    '{{ "".constructor }}',
    '{{ "".constructor.constructor("return process")() }}',
    "{{ config.constructor }}",
    "{{ config.__proto__ }}",
    '{{ config["constructor"]["constructor"] }}',
    "{{ config.tables.constructor }}",
    "{{ config.toString }}",
    "{{ params.hasOwnProperty }}",
    "{{ process.env.HOME }}",
    "{{ global.process }}",
    "{{ globalThis }}",
    "{{ this }}",
    "{{ task.constructor.name }}",
  ];

  it.each(escapes)("%s fails with a TemplateError and reveals nothing", (template) => {
    const e = renderError(() => renderOperator(shell(template), context));
    expect(e).toBeInstanceOf(ChronologError);
    expect(e.type).toBe("template");
    expect(e.field).toBe("operator.command");
    expect(["undefined_variable", "syntax"]).toContain(e.problem);
    expect(e.message).not.toContain(home);
    expect(e.message).not.toMatch(/\[object process\]|function Function|native code/);
  });

  it("assigning a prototype property assigns nothing", () => {
    expect(renderTemplate("{% assign f = config.constructor %}[{{ f }}]", context)).toBe("[]");
    const e = renderError(() =>
      renderTemplate('{% assign f = "" | append: config.constructor %}{{ f }}', context),
    );
    expect(e.problem).toBe("undefined_variable");
  });

  it("cannot include, render or lay out files", () => {
    for (const template of [
      '{% include "/etc/passwd" %}',
      '{% render "/etc/passwd" %}',
      '{% layout "/etc/passwd" %}',
      "{% include config.table %}",
    ]) {
      const e = renderError(() => renderTemplate(template, context, "operator.body"));
      expect(e.problem, template).toBe("syntax");
      expect(e.message, template).toContain("cannot read files");
      expect(e.message, template).not.toContain("root:");
    }
  });
});

describe("errors name the field and the problem", () => {
  it("an undefined variable", () => {
    const e = renderError(() => renderOperator(shell("echo {{ confg.table }}"), context));
    expect(e).toMatchObject({ field: "operator.command", problem: "undefined_variable", line: 1, column: 9 });
    expect(e.message).toBe('operator.command: undefined variable "confg" (line 1, column 9)');
    const deep = renderError(() =>
      renderOperator(
        { type: "http", method: "GET", url: "u", headers: { A: "{{ config.tabel }}" } },
        context,
      ),
    );
    expect(deep.field).toBe("operator.headers.A");
    expect(deep.message).toContain('undefined variable "config.tabel"');
    const arg = renderError(() =>
      renderOperator(
        { type: "node", module: "m", export: "default", args: { l: ["ok", "{{ nope }}"] } },
        context,
      ),
    );
    expect(arg.field).toBe("operator.args.l[1]");
  });

  it("an unknown filter", () => {
    const e = renderError(() => renderOperator(shell("echo {{ ds | shell_qoute }}"), context));
    expect(e).toMatchObject({ field: "operator.command", problem: "unknown_filter" });
    expect(e.message).toContain('unknown filter "shell_qoute"');
  });

  it("a syntax error", () => {
    const e = renderError(() => renderOperator(shell("echo {{ ds "), context));
    expect(e).toMatchObject({ field: "operator.command", problem: "syntax" });
    expect(e.message).toMatch(/not closed/);
    const tag = renderError(() => renderOperator(shell("{% if ds %}x"), context));
    expect(tag.problem).toBe("syntax");
  });
});

describe("limits", () => {
  const slow = "{% for i in (1..10000) %}{% for j in (1..10000) %}{% endfor %}{% endfor %}";

  it("stops a render that runs too long", () => {
    const started = performance.now();
    const e = renderError(() =>
      renderTemplate(slow, context, "operator.command", { renderLimit: 50, memoryLimit: 1e12 }),
    );
    expect(e).toMatchObject({ field: "operator.command", problem: "limit" });
    expect(e.message).toContain("render limit exceeded");
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("bounds the whole operator, not each field, by the render limit (default 200 ms)", () => {
    const env = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`V${i}`, slow]));
    const started = performance.now();
    const e = renderError(() => renderOperator(shell("true", { env }), context));
    expect(e.problem).toBe("limit");
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  it("stops a render that allocates too much (default limits)", () => {
    const template =
      '{% assign s = "xxxxxxxxxxxxxxxx" %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}';
    const e = renderError(() => renderTemplate(template, context, "operator.body"));
    expect(e).toMatchObject({ field: "operator.body", problem: "limit" });
    expect(e.message).toContain("memory alloc limit exceeded");
  });

  it("refuses a template longer than the parse limit", () => {
    const long = `{{ ds }}${"x".repeat(2000)}`;
    const e = renderError(() => renderTemplate(long, context, "operator.body", { parseLimit: 1000 }));
    expect(e).toMatchObject({ problem: "limit" });
    expect(renderTemplate(long, context, "operator.body", { parseLimit: 10_000 })).toHaveLength(2010);
  });
});

describe("secrets: placeholders in an http operator's headers and body only", () => {
  const http = (fields: Partial<Extract<OperatorSpec, { type: "http" }>>): OperatorSpec => ({
    type: "http",
    method: "POST",
    url: "https://api.internal/x",
    headers: {},
    ...fields,
  });
  const withSecrets: RenderContext = {
    ...context,
    secrets: ["TOKEN"],
    config: { ...context.config, secrets: "a config key" },
  };

  it("renders {{ secrets.NAME }} as the placeholder the worker fills in", () => {
    const op = renderOperator(
      http({
        headers: { Authorization: "Bearer {{ secrets.TOKEN }}" },
        body: '{"t":"{{ secrets.TOKEN }}","d":"{{ ds }}"}',
      }),
      withSecrets,
    );
    expect(op).toMatchObject({
      headers: { Authorization: "Bearer {{ secrets.TOKEN }}" },
      body: '{"t":"{{ secrets.TOKEN }}","d":"2026-11-01"}',
    });
    // A value of some other object named `secrets` is just a value.
    expect(renderTemplate("{{ config.secrets }}", withSecrets)).toBe("a config key");
  });

  it("refuses a param or a filter that would forge or alter a placeholder", () => {
    const forged = { ...withSecrets, params: { note: "{{ secrets.TOKEN }}" } };
    expect(renderError(() => renderOperator(http({ body: "{{ params.note }}" }), forged)).message).toMatch(
      /operator\.body: .*no other value may look like one/,
    );
    for (const body of ["{{ secrets.TOKEN | upcase }}", "{{ secrets.TOKEN | raw }}"]) {
      expect(renderError(() => renderOperator(http({ body }), withSecrets)).message).toMatch(
        /with no filter/,
      );
    }
    expect(
      renderError(() => renderOperator(http({ body: "{{ secrets.OTHER }}" }), withSecrets)).problem,
    ).toBe("undefined_variable");
  });

  it("refuses secrets in every other field", () => {
    const cases: [OperatorSpec, string][] = [
      [shell("curl -H {{ secrets.TOKEN }} x"), "operator.command"],
      [shell("x", { env: { T: "{{ secrets.TOKEN }}" } }), "operator.env.T"],
      [http({ url: "https://h/?k={{ secrets.TOKEN }}" }), "operator.url"],
    ];
    for (const [op, field] of cases) {
      expect(renderError(() => renderOperator(op, withSecrets)).field).toBe(field);
    }
    expect(
      renderError(() => renderOperator(shell("echo {{ secrets.TOKEN }}"), withSecrets)).message,
    ).toContain('use "$TOKEN"');
  });
});
