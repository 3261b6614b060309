import { describe, expect, it } from "vitest";
import { IssueCollector } from "../src/declare/issues.js";
import {
  type DeclarationIssue,
  declarationValidationError,
  type ExistingDeclarations,
  formatDeclarationIssue,
  ValidationError,
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
    // Inherited from the workflow: the workflow's field, said once, with the tasks it concerns.
    const doc = yamlDoc(
      ORDERS_YAML.replace("    failurePolicy:", "    connection: lake\n    failurePolicy:").replace(
        "        connection: warehouse\n",
        "",
      ),
    );
    const e2 = single(errorsOf(validate([doc])));
    expect(e2).toMatchObject({
      code: "connection_unknown",
      path: "workflows[0].connection",
      task: "sales/acme/orders_enriched/ALL",
      message:
        'sales/acme/orders_enriched/ALL and 1 more task of its workflow: connection "lake" is not declared (neither in these files nor already)',
    });
  });

  it("counts an error said once for many tasks each time, as a check asks whether it added one", () => {
    const issues = new IssueCollector();
    const at = { file: "w.yaml", path: "workflows[0].endDate" };
    issues.error("date", at, "endDate is not after startDate", "p/a/t1/ALL");
    const before = issues.errorCount;
    issues.error("date", at, "endDate is not after startDate", "p/a/t2/ALL");
    expect(issues.errorCount).toBe(before + 1);
    expect(issues.errors).toHaveLength(1);
  });

  it("says a workflow's bad dates once, however many tasks inherit them, and a task's own apart", () => {
    const doc = (third: string) =>
      yamlDoc(`workflows:
  - name: w
    project: p
    account: a
    cron: "0 0 * * *"
    startDate: "2026-11-01T00:00:00Z"
    endDate: "2026-10-01T00:00:00Z"
    tasks:
      - { name: t1, operator: { type: noop } }
      - { name: t2, operator: { type: noop } }
      - { name: t3, ${third}operator: { type: noop } }
      - { name: t4, operator: { type: noop } }
`);
    const e = single(errorsOf(validate([doc("")])));
    expect(e).toMatchObject({ code: "date", path: "workflows[0].endDate", task: "p/a/t1/ALL" });
    expect(e.message).toBe(
      "p/a/t1/ALL and 3 more tasks of its workflow: endDate 2026-10-01T00:00:00.000Z is not after startDate 2026-11-01T00:00:00.000Z",
    );
    // A task with dates of its own is wrong in its own way, said at its own field; the
    // workflow's is still said once, for the other three.
    const errors = errorsOf(
      validate([doc('startDate: "2026-09-01T00:00:00Z", endDate: "2026-08-01T00:00:00Z", ')]),
    );
    expect(errors.map((i) => [i.path, i.message.split(":")[0]])).toEqual([
      ["workflows[0].endDate", "p/a/t1/ALL and 2 more tasks of its workflow"],
      ["workflows[0].tasks[2].endDate", "p/a/t3/ALL"],
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
