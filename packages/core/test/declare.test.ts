import { describe, expect, it } from "vitest";
import {
  type DeclarationIssue,
  type DeclarationResult,
  DeclarationSyntaxError,
  declarationValidationError,
  diffTaskSpecs,
  type ExistingDeclarations,
  findCycle,
  findCycles,
  formatDeclarationIssue,
  MAX_NESTING,
  mergeTaskConfig,
  parseDeclarationText,
  type TaskSpec,
  taskSpecSchema,
  ValidationError,
  validateDeclarations,
} from "../src/index.js";

const ORDERS_YAML = `
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

function yamlDoc(text: string, filename = "decl.yaml") {
  return parseDeclarationText(text, { filename });
}

function validate(docs: Array<{ filename: string; document: unknown }>, existing?: ExistingDeclarations) {
  return validateDeclarations(docs, existing);
}

/** A one-task document with a standalone task; `extra` is merged into the task. */
function standalone(extra: Record<string, unknown>, filename = "t.yaml") {
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

function errorsOf(result: DeclarationResult): DeclarationIssue[] {
  if (result.ok) throw new Error(`expected errors, got ok with ${result.tasks.length} tasks`);
  return result.errors;
}

function okOf(result: DeclarationResult) {
  if (!result.ok) throw new Error(result.errors.map(formatDeclarationIssue).join("\n"));
  return result;
}

function taskNamed(tasks: TaskSpec[], name: string): TaskSpec {
  const t = tasks.find((x) => x.key.name === name);
  if (!t) throw new Error(`no task ${name}`);
  return t;
}

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
    expect(() => parseDeclarationText(dup, { filename: "d.yaml" })).toThrow(/d\.yaml: line 3, column 1: /);
    const bad = "a: 1\nb: [1,\n c: d: e\n";
    expect(() => parseDeclarationText(bad, { filename: "b.yml" })).toThrow(/b\.yml: line 3, column \d+: /);
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

  it("refuses an empty file: it declares nothing (a file cut short, or the wrong one)", () => {
    const errors = errorsOf(validate([parseDeclarationText("", { filename: "empty.yaml" })]));
    expect(errors).toMatchObject([{ file: "empty.yaml", message: "the file is empty: it declares nothing" }]);
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

describe("validateDeclarations: each check names the task and the field", () => {
  function single(errors: DeclarationIssue[]): DeclarationIssue {
    expect(errors, errors.map(formatDeclarationIssue).join("\n")).toHaveLength(1);
    return errors[0] as DeclarationIssue;
  }

  it("rejects unknown fields with their path", () => {
    const doc = yamlDoc(ORDERS_YAML.replace("idempotent: true", "idempotent: true\n        retires: 3"));
    const e = single(errorsOf(validate([doc])));
    expect(e).toMatchObject({
      code: "unknown_field",
      path: "workflows[0].tasks[0].retires",
      task: "sales/acme/orders_enriched/ALL",
      file: "decl.yaml",
    });
    expect(e.message).toContain("sales/acme/orders_enriched/ALL");
  });

  it("rejects unknown fields at every level: document, workflow, operator, retry, connection", () => {
    const doc = {
      filename: "u.yaml",
      document: {
        workflow: [],
        connections: [{ name: "c", maxParalelism: 2 }],
        tasks: [],
      },
    };
    // A misspelt key at the top hides none of the lists that are there: one round for all.
    expect(errorsOf(validate([doc])).map((e) => e.path)).toEqual([
      "workflow",
      "connections[0].maxParalelism",
    ]);
    const doc2 = {
      filename: "u.yaml",
      document: { connections: [{ name: "c", maxParalelism: 2 }] },
    };
    expect(single(errorsOf(validate([doc2])))).toMatchObject({ path: "connections[0].maxParalelism" });
    const e = errorsOf(
      validate([standalone({ operator: { type: "shell", command: "x", cmd: "y" }, retry: { max: 2 } })]),
    );
    expect(e.map((i) => [i.path, i.task])).toEqual([
      ["tasks[0].retry.max", "p/a/t/ALL"],
      ["tasks[0].operator.cmd", "p/a/t/ALL"],
    ]);
    const wf = {
      filename: "w.yaml",
      document: {
        workflows: [
          { name: "w", project: "p", account: "a", crom: "x", tasks: [{ name: "t", operator: {} }] },
        ],
      },
    };
    // The tasks of a broken workflow are not resolved, but their own shape is still checked.
    expect(errorsOf(validate([wf])).map((i) => i.path)).toEqual([
      "workflows[0].crom",
      "workflows[0].tasks[0].operator.type",
    ]);
  });

  it("rejects a bad cron where it is written", () => {
    const doc = yamlDoc(ORDERS_YAML.replace('cron: "0 3 * * *"', 'cron: "0 25 * * *"'));
    const e = single(errorsOf(validate([doc])));
    expect(e).toMatchObject({
      code: "cron",
      path: "workflows[0].tasks[1].cron",
      task: "sales/acme/orders_daily_report/ALL",
    });
    expect(e.message).toContain("0 25 * * *");
  });

  it("takes a python operator, a function by its module:qualname with args (templates rendered)", () => {
    const operator = { type: "python", function: "mypipeline.orders:Loader.load", args: { day: "{{ ds }}" } };
    const [task] = okOf(validate([standalone({ operator, queue: "py" })])).tasks;
    expect(task?.operator).toEqual(operator);
    expect(task?.queue).toBe("py");
    expect(okOf(validate([standalone({ operator, queue: "py" })])).warnings).toEqual([]);
    const bare = okOf(validate([standalone({ operator: { type: "python", function: "m:f" } })]));
    expect(bare.tasks[0]?.operator).toEqual({ type: "python", function: "m:f", args: {} });
    // Without a queue it is declared, with a warning: no worker of the scheduler's runs it.
    expect(bare.warnings).toEqual([
      expect.objectContaining({ path: "tasks[0].operator", task: "p/a/t/ALL", code: "operator" }),
    ]);
    expect(bare.warnings[0]?.message).toContain("a python task runs on a Python worker serving its queue");
  });

  it("refuses a python function that is not module.path:qualname, naming the field", () => {
    for (const fn of [
      "load",
      "mypipeline.orders.load",
      "a:b:c",
      "my-pipeline:load",
      "m:",
      ":f",
      "1m:f",
      "m:f()",
    ]) {
      const e = single(errorsOf(validate([standalone({ operator: { type: "python", function: fn } })])));
      expect(e, fn).toMatchObject({ path: "tasks[0].operator.function", task: "p/a/t/ALL" });
      expect(e.message, fn).toContain('a python function is "module.path:qualname"');
    }
  });

  it("rejects crons without 5 fields, unknown aliases and hashed values", () => {
    for (const cron of ["0 2 * *", "0 0 2 * * *", "@secondly", "@fortnightly", "H 2 * * *", "not a cron"]) {
      const e = single(errorsOf(validate([standalone({ cron })])));
      expect(e, cron).toMatchObject({ code: "cron", path: "tasks[0].cron", task: "p/a/t/ALL" });
    }
    for (const cron of ["@daily", "*/15 * * * *", "0 2 * * MON-FRI", "0 0 L * *"]) {
      expect(validate([standalone({ cron })]).ok, cron).toBe(true);
    }
  });

  it("reports a bad workflow cron once, at the workflow", () => {
    const doc = yamlDoc(
      ORDERS_YAML.replace('    cron: "0 2 * * *"\n    timezone: UTC', '    cron: "0 2 * *"'),
    );
    const e = single(errorsOf(validate([doc])));
    expect(e).toMatchObject({ code: "cron", path: "workflows[0].cron" });
  });

  it("refuses params that a shell task would find in one environment variable", () => {
    const doc = (params: string) =>
      yamlDoc(
        `workflows:\n  - { name: w, project: p, account: a, cron: "0 2 * * *", startDate: "2026-11-01T00:00:00Z", params: ${params}, tasks: [ { name: t, operator: { type: noop } } ] }\n`,
      );
    const e = single(errorsOf(validate([doc('{ dry-run: "", Dry_Run: "", mode: "" }')])));
    expect(e).toMatchObject({ code: "workflow", path: "workflows[0].params.Dry_Run" });
    expect(e.message).toBe(
      'params "dry-run" and "Dry_Run" would both be given to shell tasks as CHRONOLOG_PARAM_DRY_RUN: rename one',
    );
    expect(validate([doc('{ dry-run: "", mode: "" }')]).ok).toBe(true);
  });

  it("rejects an unknown time zone, separately from the cron", () => {
    const e = single(errorsOf(validate([standalone({ timezone: "Mars/Olympus" })])));
    expect(e).toMatchObject({ code: "timezone", path: "tasks[0].timezone", task: "p/a/t/ALL" });
    expect(e.message).toContain("Mars/Olympus");
    const w = single(
      errorsOf(validate([yamlDoc(ORDERS_YAML.replace("timezone: Europe/Paris", "timezone: Europe/Pariss"))])),
    );
    expect(w).toMatchObject({
      path: "workflows[0].tasks[1].timezone",
      task: "sales/acme/orders_daily_report/ALL",
    });
  });

  it("requires cron and startDate, and dates with a time zone", () => {
    const missing = errorsOf(validate([standalone({ cron: undefined, startDate: undefined })]));
    expect(missing.map((e) => [e.code, e.path, e.task])).toEqual([
      ["required", "tasks[0].cron", "p/a/t/ALL"],
      ["required", "tasks[0].startDate", "p/a/t/ALL"],
    ]);
    const local = single(errorsOf(validate([standalone({ startDate: "2026-11-01T00:00:00" })])));
    expect(local).toMatchObject({ path: "tasks[0].startDate", task: "p/a/t/ALL" });
    const order = single(errorsOf(validate([standalone({ endDate: "2026-10-01T00:00:00Z" })])));
    expect(order).toMatchObject({ code: "date", path: "tasks[0].endDate" });
    const offset = okOf(validate([standalone({ startDate: "2026-11-01T02:00:00+02:00" })]));
    expect(offset.tasks[0]?.startDate).toBe("2026-11-01T00:00:00.000Z");
  });

  it("rejects a workflow task with no cron on it or its workflow", () => {
    const doc = {
      filename: "w.yaml",
      document: {
        workflows: [
          {
            name: "w",
            project: "p",
            account: "a",
            startDate: "2026-11-01T00:00:00Z",
            tasks: [{ name: "t", operator: { type: "noop" } }],
          },
        ],
      },
    };
    const e = single(errorsOf(validate([doc])));
    expect(e).toMatchObject({ code: "required", path: "workflows[0].tasks[0].cron", task: "p/a/t/ALL" });
    expect(e.message).toContain("its workflow");
  });

  it("rejects a bad operator with the operator field's path", () => {
    const cases: Array<[unknown, string]> = [
      [{ type: "sql", query: "x" }, "tasks[0].operator.type"],
      [{ type: "shell" }, "tasks[0].operator.command"],
      [{ type: "http", url: "http://x", method: "FETCH" }, "tasks[0].operator.method"],
      ["noop", "tasks[0].operator"],
      [undefined, "tasks[0].operator"],
    ];
    for (const [operator, path] of cases) {
      const e = single(errorsOf(validate([standalone({ operator })])));
      expect(e, JSON.stringify(operator)).toMatchObject({ path, task: "p/a/t/ALL" });
    }
  });

  it("rejects an operator a connection does not allow (declared here or already)", () => {
    const doc = yamlDoc(
      ORDERS_YAML.replace('{ type: shell, command: "echo {{ ds }}"', '{ type: http, url: "http://x"'),
    );
    const e = single(errorsOf(validate([doc])));
    expect(e).toMatchObject({
      code: "connection_operator",
      path: "workflows[0].tasks[0].connection",
      task: "sales/acme/orders_enriched/ALL",
    });
    expect(e.message).toContain('connection "warehouse" allows operators shell, noop');
    expect(e.message).toContain("http");

    const existing = { connections: [{ name: "api", operators: ["http" as const] }] };
    const e2 = single(errorsOf(validate([standalone({ connection: "api" })], existing)));
    expect(e2).toMatchObject({ code: "connection_operator", path: "tasks[0].connection", task: "p/a/t/ALL" });
    expect(
      validate([standalone({ connection: "any" })], { connections: [{ name: "any", operators: [] }] }).ok,
    ).toBe(true);
  });

  it("rejects a connection declared nowhere, naming where it was written", () => {
    const e = single(errorsOf(validate([standalone({ connection: "nowhere" })])));
    expect(e).toMatchObject({ code: "connection_unknown", path: "tasks[0].connection", task: "p/a/t/ALL" });
    // Inherited from the workflow: the workflow's field, and the task named.
    const doc = yamlDoc(
      ORDERS_YAML.replace("    failurePolicy:", "    connection: lake\n    failurePolicy:").replace(
        "        connection: warehouse\n",
        "",
      ),
    );
    const errors = errorsOf(validate([doc]));
    expect(errors.map((i) => [i.path, i.task])).toEqual([
      ["workflows[0].connection", "sales/acme/orders_enriched/ALL"],
      ["workflows[0].connection", "sales/acme/orders_daily_report/ALL"],
    ]);
  });

  it("finds a connection declared in another file of the set", () => {
    const conn = { filename: "c.yaml", document: { connections: [{ name: "wh", operators: ["noop"] }] } };
    expect(validate([standalone({ connection: "wh" }), conn]).ok).toBe(true);
  });

  it("rejects a re-declared connection that no longer allows an existing task's operator", () => {
    const conn = { filename: "c.yaml", document: { connections: [{ name: "wh", operators: ["http"] }] } };
    const existing: ExistingDeclarations = {
      connections: [{ name: "wh", operators: [] }],
      tasks: [
        {
          key: { project: "x", account: "y", name: "z", partition: "ALL" },
          parents: [],
          connection: "wh",
          operator: { type: "shell" },
        },
      ],
    };
    const e = single(errorsOf(validate([conn], existing)));
    expect(e).toMatchObject({ path: "connections[0].operators", task: "x/y/z/ALL" });
  });

  it("rejects duplicate task keys, within a file and across files", () => {
    const doc = yamlDoc(ORDERS_YAML.replace("name: orders_daily_report", "name: orders_enriched"));
    const errors = errorsOf(validate([doc]));
    expect(errors[0]).toMatchObject({
      code: "duplicate",
      path: "workflows[0].tasks[1].name",
      task: "sales/acme/orders_enriched/ALL",
    });
    expect(errors[0]?.message).toContain("decl.yaml: workflows[0].tasks[0]");
    const across = single(errorsOf(validate([standalone({}, "a.yaml"), standalone({}, "b.yaml")])));
    expect(across).toMatchObject({ file: "b.yaml", path: "tasks[0].name", task: "p/a/t/ALL" });
    expect(across.message).toContain("a.yaml: tasks[0]");
    // Same name, other partition: a different key.
    expect(validate([standalone({}, "a.yaml"), standalone({ partition: "eu" }, "b.yaml")]).ok).toBe(true);
  });

  it("rejects duplicate connections and workflows, and a workflow name owned elsewhere", () => {
    const c = { connections: [{ name: "c" }, { name: "c" }] };
    expect(single(errorsOf(validate([{ filename: "c.yaml", document: c }])))).toMatchObject({
      code: "duplicate",
      path: "connections[1].name",
    });
    const existing = { workflows: [{ name: "orders", project: "other", account: "acme" }] };
    expect(single(errorsOf(validate([yamlDoc(ORDERS_YAML)], existing)))).toMatchObject({
      code: "workflow",
      path: "workflows[0].name",
    });
  });

  it("warns (does not fail) on a parent declared nowhere", () => {
    const r = okOf(validate([standalone({ parents: ["other/team/later"] })]));
    expect(r.warnings).toEqual([
      {
        severity: "warning",
        code: "parent_missing",
        file: "t.yaml",
        path: "tasks[0].parents[0]",
        task: "p/a/t/ALL",
        message: "p/a/t/ALL: parent other/team/later/ALL is not declared (yet); the task will wait for it",
      },
    ]);
    const known = {
      tasks: [{ key: { project: "other", account: "team", name: "later", partition: "ALL" }, parents: [] }],
    };
    expect(okOf(validate([standalone({ parents: ["other/team/later"] })], known)).warnings).toEqual([]);
  });

  it("says which known task a parent declared nowhere most likely means, its own project first", () => {
    const key = (project: string, account: string, name: string, partition = "ALL") => ({
      key: { project, account, name, partition },
      parents: [],
    });
    const known = {
      tasks: [
        key("ingest", "acme", "orders_raw"),
        key("ingest", "acme", "orders_raw", "eu"),
        key("other", "acme", "orders_raw"),
        key("ingest", "acme", "refunds_raw"),
        key("zzz", "far", "unrelated"),
      ],
    };
    const [typo] = okOf(validate([standalone({ parents: ["ingest/acme/orders_rwa"] })], known)).warnings;
    expect(typo).toMatchObject({
      code: "parent_missing",
      path: "tasks[0].parents[0]",
      suggestions: ["ingest/acme/orders_raw/ALL"],
    });
    expect(typo?.message).toBe(
      "p/a/t/ALL: parent ingest/acme/orders_rwa/ALL is not declared (yet) (did you mean ingest/acme/orders_raw/ALL?); the task will wait for it",
    );
    // Another partition, another case, another project: the same task is found.
    const [partition] = okOf(
      validate([standalone({ parents: ["ingest/acme/orders_raw/us"] })], known),
    ).warnings;
    expect(partition?.suggestions).toEqual([
      "ingest/acme/orders_raw/ALL",
      "ingest/acme/orders_raw/eu",
      "other/acme/orders_raw/ALL",
    ]);
    const [cased] = okOf(validate([standalone({ parents: ["Ingest/acme/Orders_raw"] })], known)).warnings;
    expect(cased?.suggestions?.[0]).toBe("ingest/acme/orders_raw/ALL");
    const [project] = okOf(validate([standalone({ parents: ["sales/acme/orders_raw"] })], known)).warnings;
    expect(project?.suggestions).toEqual([
      "ingest/acme/orders_raw/ALL",
      "other/acme/orders_raw/ALL",
      "ingest/acme/orders_raw/eu",
    ]);
    // Nothing near: no guess.
    const [far] = okOf(validate([standalone({ parents: ["team/x/completely_else"] })], known)).warnings;
    expect(far?.suggestions).toBeUndefined();
    expect(far?.message).not.toContain("did you mean");
  });

  it("rejects malformed parents, unknown siblings and duplicates", () => {
    const bad = errorsOf(
      validate([
        standalone({ parents: ["a/b", "sibling", 42, { project: "p", name: "x" }, "p/a/u", "p/a/u/ALL"] }),
      ]),
    );
    expect(bad.map((e) => [e.path, e.task])).toEqual([
      ["tasks[0].parents[0]", "p/a/t/ALL"],
      ["tasks[0].parents[1]", "p/a/t/ALL"],
      ["tasks[0].parents[2]", "p/a/t/ALL"],
      ["tasks[0].parents[3].account", "p/a/t/ALL"],
      ["tasks[0].parents[5]", "p/a/t/ALL"],
    ]);
    const doc = yamlDoc(ORDERS_YAML.replace("[ orders_enriched,", "[ orders_enriche,"));
    const e = single(errorsOf(validate([doc])));
    expect(e).toMatchObject({ code: "parent", path: "workflows[0].tasks[1].parents[0]" });
    expect(e.message).toContain(
      '"orders_enriche" is not a task of workflow "orders" (did you mean "orders_enriched"?)',
    );
  });

  it("sibling parents follow a sibling's own project override and partition", () => {
    const doc = {
      filename: "s.yaml",
      document: {
        workflows: [
          {
            name: "w",
            project: "p",
            account: "a",
            cron: "0 2 * * *",
            startDate: "2026-11-01T00:00:00Z",
            tasks: [
              { name: "up", project: "q", partition: "eu", operator: { type: "noop" } },
              { name: "down", parents: ["up"], operator: { type: "noop" } },
            ],
          },
        ],
      },
    };
    const r = okOf(validate([doc]));
    expect(taskNamed(r.tasks, "down").parents).toEqual([
      { project: "q", account: "a", name: "up", partition: "eu" },
    ]);
  });

  it("rejects a cycle, named in order, at the parent entry that closes it", () => {
    const doc = {
      filename: "c.yaml",
      document: {
        tasks: [
          {
            ...standalone({}).document.tasks[0],
            project: "sales",
            account: "acme",
            name: "a",
            parents: ["sales/acme/b"],
          },
          {
            ...standalone({}).document.tasks[0],
            project: "sales",
            account: "acme",
            name: "b",
            parents: ["sales/acme/a"],
          },
        ],
      },
    };
    const e = single(errorsOf(validate([doc])));
    expect(e.code).toBe("cycle");
    expect(e.message).toBe(
      "sales/acme/b/ALL: dependency cycle (each task is a parent of the next): sales/acme/a/ALL -> sales/acme/b/ALL -> sales/acme/a/ALL",
    );
    expect(e).toMatchObject({ path: "tasks[1].parents[0]", task: "sales/acme/b/ALL" });
  });

  it("rejects a task that is its own parent", () => {
    const e = single(errorsOf(validate([standalone({ parents: ["p/a/t"] })])));
    expect(e.message).toContain("p/a/t/ALL -> p/a/t/ALL");
    expect(e.path).toBe("tasks[0].parents[0]");
  });

  it("finds a cycle through existing declarations, and lets new parents replace old ones", () => {
    const key = (name: string) => ({ project: "p", account: "a", name, partition: "ALL" });
    // existing: x's parent is t; y's parent is x. New: t's parent is y => t -> x -> y -> t.
    const existing = {
      tasks: [
        { key: key("x"), parents: [key("t")] },
        { key: key("y"), parents: [key("x")] },
      ],
    };
    const e = single(errorsOf(validate([standalone({ parents: ["p/a/y"] })], existing)));
    expect(e.message).toContain("p/a/t/ALL -> p/a/x/ALL -> p/a/y/ALL -> p/a/t/ALL");
    expect(e).toMatchObject({ path: "tasks[0].parents[0]", task: "p/a/t/ALL" });

    // Re-declaring x without its parent t breaks the old edge: no cycle any more.
    const x = standalone({ name: "x", parents: [] }, "x.yaml");
    expect(validate([standalone({ parents: ["p/a/y"] }), x], existing).ok).toBe(true);
  });

  it("writes nothing on any error: no tasks are returned with errors", () => {
    const r = validate([yamlDoc(ORDERS_YAML), standalone({ cron: "bad" }, "bad.yaml")]);
    expect(r.ok).toBe(false);
    expect("tasks" in r).toBe(false);
  });

  it("reports every problem of a set at once and turns them into one ValidationError", () => {
    const errors = errorsOf(
      validate([standalone({ cron: "bad", timezone: "Nowhere/Land", connection: "nope", extra: 1 })]),
    );
    expect(errors.map((e) => e.path).sort()).toEqual(["tasks[0].extra"]);
    const many = errorsOf(
      validate([standalone({ cron: "bad", timezone: "Nowhere/Land", connection: "nope" })]),
    );
    expect(many.map((e) => e.path)).toEqual(["tasks[0].cron", "tasks[0].timezone", "tasks[0].connection"]);
    const error = declarationValidationError(many);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toContain("t.yaml: tasks[0].cron: p/a/t/ALL: invalid cron");
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
