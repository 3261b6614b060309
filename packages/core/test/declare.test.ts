import { describe, expect, it } from "vitest";
import {
  DeclarationSyntaxError,
  diffTaskSpecs,
  findCycle,
  findCycles,
  MAX_NESTING,
  mergeTaskConfig,
  parseDeclarationText,
  type TaskSpec,
  taskSpecSchema,
  ValidationError,
  validateEventData,
} from "../src/index.js";

import {
  errorsOf,
  ORDERS_YAML,
  okOf,
  standalone,
  taskNamed,
  validate,
  yamlDoc,
} from "./support/declarations.js";

describe("declaration files: a full document", () => {
  const result = okOf(validate([yamlDoc(ORDERS_YAML)]));

  it("normalises every task into a valid TaskSpec", () => {
    expect(result.tasks.map((t) => `${t.key.project}/${t.key.name}`)).toEqual([
      "sales/orders_enriched",
      "sales/orders_daily_report",
      "ingest/orders_raw",
    ]);
    for (const t of result.tasks) expect(taskSpecSchema.parse(t)).toEqual(t);
    expect(result.warnings).toEqual([]);
  });

  it("workflow tasks inherit schedule, project, account, retry and can override", () => {
    const enriched = taskNamed(result.tasks, "orders_enriched");
    expect(enriched.key).toEqual({
      project: "sales",
      account: "acme",
      name: "orders_enriched",
      partition: "ALL",
    });
    expect(enriched.workflow).toBe("orders");
    expect(enriched.cron).toBe("0 2 * * *");
    expect(enriched.timezone).toBe("UTC");
    expect(enriched.startDate).toBe("2026-11-01T00:00:00.000Z");
    expect(enriched.connection).toBe("warehouse");
    expect(enriched.idempotent).toBe(true);
    // retry merged field by field: task maxAttempts over the workflow's, workflow initialDelayMs kept.
    expect(enriched.retry).toMatchObject({ maxAttempts: 5, initialDelayMs: 500, factor: 2 });

    const report = taskNamed(result.tasks, "orders_daily_report");
    expect(report.cron).toBe("0 3 * * *");
    expect(report.timezone).toBe("Europe/Paris");
    expect(report.retry).toMatchObject({ maxAttempts: 3, initialDelayMs: 500 });
    expect(report.idempotent).toBe(false);
    expect(report.connection).toBeUndefined();
  });

  it("merges config workflow -> task -> inline (operator.config), deeply", () => {
    const enriched = taskNamed(result.tasks, "orders_enriched");
    expect(enriched.config).toEqual({ region: "eu", db: { host: "w1", port: 6543 }, table: "inline_table" });
    // The inline level is taken out of the operator.
    expect(enriched.operator).toEqual({ type: "shell", command: "echo {{ ds }}", env: {} });
    expect(taskNamed(result.tasks, "orders_daily_report").config).toEqual({
      region: "eu",
      db: { host: "w1", port: 5432 },
    });
  });

  it("resolves sibling, string and object parents to full keys", () => {
    const raw = { project: "ingest", account: "acme", name: "orders_raw", partition: "ALL" };
    expect(taskNamed(result.tasks, "orders_enriched").parents).toEqual([raw]);
    expect(taskNamed(result.tasks, "orders_daily_report").parents).toEqual([
      { project: "sales", account: "acme", name: "orders_enriched", partition: "ALL" },
      raw,
    ]);
  });

  it("returns connections and workflows as specs", () => {
    expect(result.connections).toEqual([
      {
        name: "warehouse",
        operators: ["shell", "noop"],
        maxParallelism: 4,
        config: {},
      },
    ]);
    expect(result.workflows).toEqual([
      {
        name: "orders",
        project: "sales",
        account: "acme",
        cron: "0 2 * * *",
        timezone: "UTC",
        maxActiveRuns: 16,
        maxActiveTasks: 16,
        failurePolicy: "skip_dependents",
        config: { region: "eu", db: { host: "w1", port: 5432 } },
        params: {},
        alerts: [],
      },
    ]);
  });

  it("YAML and JSON give the same result", () => {
    const json = JSON.stringify(yamlDoc(ORDERS_YAML).document, null, 2);
    const fromJson = parseDeclarationText(json, { filename: "decl.json" });
    expect(fromJson.format).toBe("json");
    expect(fromJson.document).toEqual(yamlDoc(ORDERS_YAML).document);
    // The same specs; only the file named in each task's location differs.
    const { taskLocations, ...specs } = okOf(validate([fromJson]));
    const { taskLocations: yamlLocations, ...yamlSpecs } = result;
    expect(specs).toEqual(yamlSpecs);
    expect(taskLocations.map((l) => l.path)).toEqual(yamlLocations.map((l) => l.path));
    // A JSON document is also readable with format: "yaml" (YAML is a superset).
    expect(parseDeclarationText(json, { filename: "x", format: "yaml" }).document).toEqual(fromJson.document);
  });

  it("later overrides a parent partition with the partition given in the key", () => {
    const r = okOf(
      validate([
        standalone({ parents: ["p/a/up/2026", { project: "p", account: "a", name: "up2" }] }),
        standalone({ name: "up", partition: "2026", parents: [] }, "u.yaml"),
        standalone({ name: "up2" }, "u2.yaml"),
      ]),
    );
    expect(r.tasks[0]?.parents).toEqual([
      { project: "p", account: "a", name: "up", partition: "2026" },
      { project: "p", account: "a", name: "up2", partition: "ALL" },
    ]);
  });
});

describe("parseDeclarationText", () => {
  it("names the file, line and column of malformed YAML", () => {
    const text = "tasks:\n  - project: p\n    name: [a, b\n    account: a\n";
    let caught: unknown;
    try {
      parseDeclarationText(text, { filename: "teams/sales.yaml" });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(DeclarationSyntaxError);
    expect(caught).toBeInstanceOf(ValidationError);
    const err = caught as DeclarationSyntaxError;
    expect(err.filename).toBe("teams/sales.yaml");
    expect(err.line).toBeGreaterThanOrEqual(3);
    expect(err.message).toMatch(/^teams\/sales\.yaml: line \d+, column \d+: /);
  });

  it("reports the exact line of a bad indentation / duplicate key in YAML", () => {
    const dup = "tasks: []\nworkflows: []\ntasks: []\n";
    expect(() => parseDeclarationText(dup, { filename: "d.yaml" })).toThrow(
      /d\.yaml: line 3, column 1: duplicate key "tasks"/,
    );
    // Named as JSON's refusal names it, in a block mapping or a flow one, quoted or not.
    expect(() =>
      parseDeclarationText("tasks:\n  - name: a\n    cron: x\n    name: b\n", { filename: "d.yaml" }),
    ).toThrow('d.yaml: line 4, column 5: duplicate key "name"');
    expect(() =>
      parseDeclarationText('tasks:\n  - { name: a, "cron": x, "cron": b }\n', { filename: "d.yaml" }),
    ).toThrow('duplicate key "cron"');
    const bad = "a: 1\nb: [1,\n c: d: e\n";
    expect(() => parseDeclarationText(bad, { filename: "b.yml" })).toThrow(/b\.yml: line 3, column \d+: /);
  });

  it("refuses values JSON cannot hold, naming where; takes -0 as 0", () => {
    const refused = (value: string, format: "yaml" | "json" = "yaml") =>
      format === "yaml"
        ? () =>
            parseDeclarationText(`tasks:\n  - name: x\n    config: { v: ${value} }\n`, { filename: "v.yaml" })
        : () => parseDeclarationText(`{"tasks": [{"config": {"v": ${value}}}]}`, { filename: "v.json" });
    for (const v of [".nan", ".inf", "-.inf", "1e400"])
      expect(refused(v), v).toThrow(
        /^v\.yaml: line 3, column 18: tasks\[0\]\.config\.v: -?(NaN|Infinity) is not a number a declaration can hold/,
      );
    expect(refused("1e400", "json")).toThrow(
      /^v\.json: line 1, column \d+: tasks\[0\]\.config\.v: Infinity is not/,
    );
    for (const [v, what] of [
      ["!!binary aGVsbG8=", "binary data"],
      ["!!set {a, b}", "a set"],
      ["!!omap [a: 1]", "an ordered map"],
      ["!!timestamp 2026-12-01", "a timestamp"],
    ])
      expect(refused(v as string), v).toThrow(
        `tasks[0].config.v: ${what} (a YAML tag) is not a value a declaration holds`,
      );
    const doc = parseDeclarationText("tasks:\n  - config: { v: -0, w: [1, -0] }\n", { filename: "z.yaml" })
      .document as {
      tasks: Array<{ config: { v: number; w: number[] } }>;
    };
    expect(Object.is(doc.tasks[0]?.config.v, 0)).toBe(true);
    expect(Object.is(doc.tasks[0]?.config.w[1], 0)).toBe(true);
  });

  it("names the file, line and column of malformed JSON, duplicate keys included", () => {
    const cases: Array<[string, number, number, RegExp]> = [
      ['{\n  "tasks": [\n    { "name": tru }\n  ]\n}', 3, 15, /unexpected "t"/],
      ['{\n  "tasks": [],\n}', 3, 1, /double-quoted property name/],
      ['{\n  "a": 1,\n  "a": 2\n}', 3, 3, /duplicate key "a"/],
      ['{ "a": "x', 1, 8, /unterminated string/],
      ['{ "a": 1 } x', 1, 12, /after the end/],
    ];
    for (const [text, line, column, message] of cases) {
      let caught: DeclarationSyntaxError | undefined;
      try {
        parseDeclarationText(text, { filename: "d.json" });
      } catch (e) {
        caught = e as DeclarationSyntaxError;
      }
      expect(caught, text).toBeInstanceOf(DeclarationSyntaxError);
      expect([caught?.line, caught?.column], text).toEqual([line, column]);
      expect(caught?.problem, text).toMatch(message);
      expect(caught?.message, text).toContain(`d.json: line ${line}, column ${column}: `);
    }
  });

  it("parses JSON strings, numbers and nesting exactly like JSON.parse", () => {
    const value = { s: 'a"b\\c\u00e9\n', n: [-1.5e3, 0, 12], t: true, f: false, z: null, o: { x: {} } };
    const text = JSON.stringify(value);
    expect(parseDeclarationText(text, { filename: "v.json" }).document).toEqual(value);
  });

  it("refuses nesting deeper than MAX_NESTING before parsing, naming the limit and where", () => {
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
    const cases: Array<[string, string, number]> = [
      [`tasks: ${deep}\n`, "d.yaml", 7 + MAX_NESTING - 1],
      [`{"tasks": ${deep}}`, "d.json", 10 + MAX_NESTING],
      [`tasks:\n${"- ".repeat(100_000)}x\n`, "s.yaml", 2 * (MAX_NESTING - 1) + 1],
    ];
    for (const [text, filename, column] of cases) {
      let caught: DeclarationSyntaxError | undefined;
      try {
        parseDeclarationText(text, { filename });
      } catch (e) {
        caught = e as DeclarationSyntaxError;
      }
      expect(caught, filename).toBeInstanceOf(DeclarationSyntaxError);
      expect(caught?.problem).toBe(
        `nesting is deeper than ${MAX_NESTING} levels, the most a declaration may have`,
      );
      expect(caught?.column, filename).toBe(column);
      // The excerpt is a window of the offending line, with the caret under the column.
      expect(caught?.excerpt.length, filename).toBeLessThan(400);
      const [shown = "", caret = ""] = (caught?.excerpt ?? "").split("\n");
      const line = text.split("\n")[(caught?.line ?? 1) - 1] ?? "";
      expect(caret.endsWith("^")).toBe(true);
      expect(shown[caret.length - 1]).toBe(line[column - 1]);
    }
  });

  it("takes nesting up to the limit, and brackets in quoted or plain scalars are not nesting", () => {
    const nested = `${"[".repeat(MAX_NESTING - 2)}1${"]".repeat(MAX_NESTING - 2)}`;
    expect(parseDeclarationText(`a: ${nested}\n`, { filename: "ok.yaml" }).document).toBeTruthy();
    expect(parseDeclarationText(`{"a": ${nested}}`, { filename: "ok.json" }).document).toBeTruthy();
    const scalars = `a: "${"[".repeat(500)}"\nb: echo ${"{".repeat(500)}\nc: '${"[".repeat(500)}'\n`;
    expect(parseDeclarationText(scalars, { filename: "s.yaml" }).document).toMatchObject({
      a: "[".repeat(500),
      c: "[".repeat(500),
    });
  });

  it("counts nesting after a quote that starts no scalar, a tag, an anchor or a complex key", () => {
    const deep = `${"[".repeat(300)}${"]".repeat(300)}`;
    const cases = [
      `a: [x', ${deep}]\n`,
      `a: [x", ${deep}]\n`,
      `a: {k: x', b: ${deep}}\n`,
      `a: [!!str 'x, [', ${deep}, 'y']\n`,
      `a: [&k 'x', ${deep}]\n`,
      `? 'k'\n: ${deep}\n`,
      // A quoted scalar over two lines: what follows its end is nesting, found once parsed.
      `a: ['x\n   ' , ${deep} ]\n`,
      `a: ['x\n   ' , ${"[".repeat(20_000)}${"]".repeat(20_000)} ]\n`,
      // Read on the parser's own tokens before it parses: a document marker, a plain scalar or a
      // quoted key over two lines.
      `--- ${"[".repeat(3000)}${"]".repeat(3000)}\n`,
      `a: [a\n 'b, ${"[".repeat(3000)}]\n`,
      `{'a\n': ${"[".repeat(3000)}${"]".repeat(3000)}}\n`,
    ];
    // Twice each: the parser never runs out of stack (which it cannot always say as an error).
    for (const text of [...cases, ...cases])
      expect(() => parseDeclarationText(text, { filename: "n.yaml" }), text.slice(0, 30)).toThrow(
        `nesting is deeper than ${MAX_NESTING} levels, the most a declaration may have`,
      );
    // Brackets in quoted scalars after tags and anchors, and quotes inside words, are text.
    expect(
      parseDeclarationText(`a: [!!str '[[[[', &x "{{{{", 'it''s [', don't]\nb: {k: 'x[[', j: "y{{"}\n`, {
        filename: "ok.yaml",
      }).document,
    ).toEqual({ a: ["[[[[", "{{{{", "it's [", "don't"], b: { k: "x[[", j: "y{{" } });
  });

  it("refuses an empty file: it declares nothing (a file cut short, or the wrong one)", () => {
    const errors = errorsOf(validate([parseDeclarationText("", { filename: "empty.yaml" })]));
    expect(errors).toMatchObject([{ file: "empty.yaml", message: "the file is empty: it declares nothing" }]);
  });

  it("refuses an http operator's or alert sink's URL that is not http or https, at its field", () => {
    const task = (url: string, extra = "") =>
      `tasks:\n  - { project: p, account: a, name: t, cron: "0 2 * * *", startDate: "2026-11-01T00:00:00Z", operator: { type: http, url: ${JSON.stringify(url)} }${extra} }\n`;
    for (const url of [
      "file:///etc/passwd",
      "ftp://h/x",
      "localhost:8080/x",
      "/run",
      "reports.internal/{{ ds }}",
      "http://",
      "http:{{ ds }}",
    ]) {
      const errors = errorsOf(validate([parseDeclarationText(task(url), { filename: "u.yaml" })]));
      expect(errors, url).toMatchObject([
        {
          path: "tasks[0].operator.url",
          message: `p/a/t/ALL: ${JSON.stringify(url)} is not an http or https URL (https://host/path)`,
        },
      ]);
    }
    for (const url of ["https://h/run?day={{ ds }}", "{{ params.base }}/run", "HTTP://127.0.0.1:8080/x"])
      expect(validate([parseDeclarationText(task(url), { filename: "u.yaml" })]).ok, url).toBe(true);
    const sink = (url: string) => `, alerts: [{ http: { url: ${JSON.stringify(url)} } }]`;
    const errors = errorsOf(
      validate([parseDeclarationText(task("https://h/", sink("file:///tmp/x")), { filename: "u.yaml" })]),
    );
    expect(errors).toMatchObject([{ path: "tasks[0].alerts[0].http.url" }]);
    // What an earlier version declared and stored is written still: an alert raised with such a sink.
    expect(() =>
      validateEventData("AlertRaised", {
        alertId: "task_failed:p/a/t/ALL@2026-11-28T02:00:00.000Z",
        kind: "task_failed",
        reason: "exit code 1",
        sinks: [{ http: { url: "hooks.internal/x" } }],
      }),
    ).not.toThrow();
  });

  it("refuses a startDate whose first interval ends past the year 9999; warns of an endDate before the first interval", () => {
    const task = (dates: string) =>
      `tasks:\n  - { project: p, account: a, name: t, cron: "0 2 * * *", ${dates}, operator: { type: noop } }\n`;
    const late = errorsOf(
      validate([parseDeclarationText(task('startDate: "9999-12-31T22:30:00Z"'), { filename: "d.yaml" })]),
    );
    expect(late).toMatchObject([
      {
        path: "tasks[0].startDate",
        message:
          "p/a/t/ALL: startDate 9999-12-31T22:30:00.000Z: its first slot is after the year 9999, past the last date the log can hold",
      },
    ]);
    const lastDay = errorsOf(
      validate([parseDeclarationText(task('startDate: "9999-12-31T01:00:00Z"'), { filename: "d.yaml" })]),
    );
    expect(lastDay[0]?.message).toContain(
      "its first interval, from 9999-12-31T02:00:00.000Z, ends after the year 9999",
    );
    const never = validate([
      parseDeclarationText(task('startDate: "2026-01-01T00:00:00Z", endDate: "2026-01-01T01:00:00Z"'), {
        filename: "d.yaml",
      }),
    ]);
    expect(never.ok).toBe(true);
    expect(never.warnings).toMatchObject([
      {
        path: "tasks[0].endDate",
        message:
          "p/a/t/ALL: endDate 2026-01-01T01:00:00.000Z is before the schedule's first interval, 2026-01-01T02:00:00.000Z (its first slot at or after startDate): the task never runs",
      },
    ]);
    const once = validate([
      parseDeclarationText(task('startDate: "2026-01-01T00:00:00Z", endDate: "2026-01-01T02:00:00Z"'), {
        filename: "d.yaml",
      }),
    ]);
    expect(once.warnings).toEqual([]);
  });

  it("keeps a __proto__ key as plain data (no prototype change) and rejects it in config", () => {
    const doc = parseDeclarationText(
      '{"tasks":[{"project":"p","account":"a","name":"t","cron":"0 2 * * *","startDate":"2026-11-01T00:00:00Z","operator":{"type":"noop"},"config":{"__proto__":{"polluted":1}}}]}',
      { filename: "p.json" },
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const errors = errorsOf(validate([doc]));
    expect(errors[0]).toMatchObject({ path: "tasks[0].config.__proto__", task: "p/a/t/ALL" });
  });
});

describe("findCycle", () => {
  it("returns undefined for a DAG", () => {
    expect(findCycle({ a: ["b", "c"], b: ["c"], c: [] })).toBeUndefined();
  });

  it("returns one cycle in path order, deterministically, whatever the input order", () => {
    expect(findCycle({ c: ["a"], b: ["c"], a: ["b"] })).toEqual(["a", "b", "c", "a"]);
    expect(
      findCycle(
        new Map([
          ["a", ["b"]],
          ["b", ["c", "a"]],
          ["c", ["a"]],
        ]),
      ),
    ).toEqual(["a", "b", "a"]);
    expect(findCycle({ z: ["z"] })).toEqual(["z", "z"]);
  });

  it("finds one cycle per strongly connected component", () => {
    expect(findCycles({ a: ["b"], b: ["a"], c: ["d"], d: ["c"], e: ["a"] })).toEqual([
      ["a", "b", "a"],
      ["c", "d", "c"],
    ]);
  });

  it("handles long chains without recursion limits", () => {
    const edges: Record<string, string[]> = {};
    for (let i = 0; i < 50_000; i++) edges[`n${i}`] = [`n${i + 1}`];
    expect(findCycle(edges)).toBeUndefined();
    edges.n50000 = ["n0"];
    expect(findCycle(edges)).toHaveLength(50_002);
  });
});

describe("mergeTaskConfig", () => {
  it("later levels win; objects merge deeply; arrays and null replace", () => {
    const workflow = { region: "eu", db: { host: "w", port: 1 }, tags: ["a", "b"], keep: 1 };
    const task = { db: { port: 2 }, tags: ["c"], keep: null };
    const inline = { db: { user: "u" }, region: "us" };
    expect(mergeTaskConfig(workflow, task, inline)).toEqual({
      region: "us",
      db: { host: "w", port: 2, user: "u" },
      tags: ["c"],
      keep: null,
    });
    expect(workflow.db).toEqual({ host: "w", port: 1 });
    expect(mergeTaskConfig(undefined, undefined)).toEqual({});
  });
});

describe("diffTaskSpecs", () => {
  const base = okOf(validate([yamlDoc(ORDERS_YAML)])).tasks[0] as TaskSpec;

  it("is empty for equal specs", () => {
    expect(diffTaskSpecs(base, structuredClone(base))).toEqual([]);
  });

  it("lists changed fields by path, in a deterministic order", () => {
    const after: TaskSpec = {
      ...base,
      cron: "0 4 * * *",
      operator: { type: "shell", command: "echo changed", env: { A: "1" } },
      parents: [],
      config: { ...base.config, table: "other", added: true },
      retry: { ...base.retry, maxAttempts: 9 },
    };
    expect(diffTaskSpecs(base, after)).toEqual([
      { field: "cron", from: "0 2 * * *", to: "0 4 * * *" },
      { field: "operator.command", from: "echo {{ ds }}", to: "echo changed" },
      { field: "operator.env.A", from: undefined, to: "1" },
      {
        field: "parents",
        from: [{ project: "ingest", account: "acme", name: "orders_raw", partition: "ALL" }],
        to: [],
      },
      { field: "retry.maxAttempts", from: 5, to: 9 },
      { field: "config.added", from: undefined, to: true },
      { field: "config.table", from: "inline_table", to: "other" },
    ]);
  });

  it("reports an operator type change as one change of operator, and removed optional fields", () => {
    const after: TaskSpec = { ...base, operator: { type: "noop" } };
    delete (after as { connection?: string }).connection;
    expect(diffTaskSpecs(base, after)).toEqual([
      { field: "operator", from: base.operator, to: { type: "noop" } },
      { field: "connection", from: "warehouse", to: undefined },
    ]);
  });
});
