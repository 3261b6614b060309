import {
  type ConnectionSpec,
  connectionSpecSchema,
  connectionStream,
  type DeclarationInput,
  decideConnectionDeclaration,
  decideDeclaration,
  decideIntervalCompleted,
  decideTaskDeclaration,
  decideWorkflowDeclaration,
  decideWorkflowRetirement,
  declarationOf,
  diffTaskSpecs,
  type TaskSpec,
  taskStream,
  type WorkflowSpec,
  workflowSpecSchema,
  workflowStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  declaredWorkflow,
  idOf,
  instance,
  intended,
  keyOf,
  taskSpec,
} from "./support/events.js";
import { type Given, on, projectionOf, specification } from "./support/specification.js";

const NOW = Date.parse("2026-11-30T10:00:00.000Z");

/** The declaration of task `t` today, if any, read from the projection. */
const declaredSpec = (history: readonly Given[]) => {
  const task = projectionOf(history).tasks.get(idOf("t"));
  return task && declarationOf(task);
};

describe("diffTaskSpecs: the fields a re-declaration changes", () => {
  const spec = specification({
    fold: (history: readonly Given[]) => {
      const before = declaredSpec(history);
      if (!before) throw new Error("the history declares no task");
      return before;
    },
    decide: (before, after: TaskSpec) => diffTaskSpecs(before, after),
  });

  it("the same declaration changes nothing", () => {
    spec.given(declaredTask("t")).when(taskSpec("t")).then([]);
  });

  it("changed fields are listed by path, top-level fields in the schema's order", () => {
    spec
      .given(declaredTask("t", DAY, taskSpec("t", { retry: { maxAttempts: 2 }, config: { table: "a" } })))
      .when(taskSpec("t", { cron: "0 4 * * *", retry: { maxAttempts: 5 }, config: { table: "b", extra: 1 } }))
      .then([
        { field: "cron", from: "0 2 * * *", to: "0 4 * * *" },
        { field: "retry.maxAttempts", from: 2, to: 5 },
        { field: "config.extra", from: undefined, to: 1 },
        { field: "config.table", from: "a", to: "b" },
      ]);
  });

  it("an operator of another type is one change of the whole operator", () => {
    spec
      .given(declaredTask("t"))
      .when(taskSpec("t", { operator: { type: "shell", command: "echo hi" } }))
      .then([
        { field: "operator", from: { type: "noop" }, to: { type: "shell", command: "echo hi", env: {} } },
      ]);
  });

  it("parents compare as a whole list, and an optional field dropped is a change to undefined", () => {
    spec
      .given(declaredTask("t", DAY, taskSpec("t", { parents: [keyOf("up")], cacheKey: "{{ ds }}" })))
      .when(taskSpec("t", { parents: [] }))
      .then([
        { field: "parents", from: [keyOf("up")], to: [] },
        { field: "cacheKey", from: "{{ ds }}", to: undefined },
      ]);
  });
});

describe("decideTaskDeclaration: what declaring a task writes", () => {
  const spec = specification({
    fold: declaredSpec,
    decide: (before, input: { spec: TaskSpec; now: number }) =>
      decideTaskDeclaration(before, input.spec, input.now),
  });

  it("a new task is declared at the first interval from its start date", () => {
    const t = taskSpec("t");
    spec
      .given()
      .when({ spec: t, now: NOW })
      .then({
        outcome: "declared",
        events: [
          {
            type: "TaskDeclared",
            data: {
              key: keyOf("t"),
              spec: t,
              logicalDate: "2026-11-01T02:00:00.000Z",
              nextRunDate: "2026-11-02T02:00:00.000Z",
            },
          },
        ],
        changes: [],
      });
  });

  it("a new task that does not catch up starts at the latest interval already due", () => {
    const t = taskSpec("t", { catchup: false });
    spec
      .given()
      .when({ spec: t, now: NOW })
      .then({
        outcome: "declared",
        events: [
          {
            type: "TaskDeclared",
            data: {
              key: keyOf("t"),
              spec: t,
              logicalDate: "2026-11-29T02:00:00.000Z",
              nextRunDate: "2026-11-30T02:00:00.000Z",
            },
          },
        ],
        changes: [],
      });
  });

  it("the same declaration again writes nothing", () => {
    spec
      .given(declaredTask("t"))
      .when({ spec: taskSpec("t"), now: NOW })
      .then({ outcome: "unchanged", events: [], changes: [] });
  });

  it("a changed declaration records the new spec and what changed", () => {
    const after = taskSpec("t", { leaseSeconds: 120 });
    const changes = [{ field: "leaseSeconds", from: 30, to: 120 }];
    spec
      .given(declaredTask("t"))
      .when({ spec: after, now: NOW })
      .then({
        outcome: "changed",
        events: [{ type: "TaskDeclarationChanged", data: { key: keyOf("t"), spec: after, changes } }],
        changes,
      });
  });
});

describe("decideConnectionDeclaration and decideWorkflowDeclaration", () => {
  const warehouse = (o: Partial<ConnectionSpec> = {}) => connectionSpecSchema.parse({ name: "wh", ...o });
  const connections = specification({
    fold: (history: readonly Given[]) => projectionOf(history).connections.get("wh"),
    decide: (before, after: ConnectionSpec) => decideConnectionDeclaration(before, after),
  });
  const declaredWarehouse = on(connectionStream("wh"), {
    type: "ConnectionDeclared",
    data: { spec: warehouse() },
  });

  it("a new connection is declared; a changed one declared again; an equal one writes nothing", () => {
    connections
      .given()
      .when(warehouse())
      .then({ outcome: "declared", events: [{ type: "ConnectionDeclared", data: { spec: warehouse() } }] });
    const wider = warehouse({ maxParallelism: 4 });
    connections
      .given(declaredWarehouse)
      .when(wider)
      .then({ outcome: "changed", events: [{ type: "ConnectionDeclared", data: { spec: wider } }] });
    connections.given(declaredWarehouse).when(warehouse()).then({ outcome: "unchanged", events: [] });
  });

  const workflows = specification({
    fold: (history: readonly Given[]) => projectionOf(history).workflows.get("w"),
    decide: (before, after: WorkflowSpec) => decideWorkflowDeclaration(before, after),
  });
  const flow = (failurePolicy: "skip_dependents" | "fail_fast") =>
    workflowSpecSchema.parse({ name: "w", project: "p", account: "a", failurePolicy });

  it("a new workflow is declared; a changed one declared again; an equal one writes nothing", () => {
    workflows
      .given()
      .when(flow("fail_fast"))
      .then({
        outcome: "declared",
        events: [{ type: "WorkflowDeclared", data: { spec: flow("fail_fast") } }],
      });
    workflows
      .given(declaredWorkflow("w", "skip_dependents"))
      .when(flow("fail_fast"))
      .then({
        outcome: "changed",
        events: [{ type: "WorkflowDeclared", data: { spec: flow("fail_fast") } }],
      });
    workflows
      .given(declaredWorkflow("w", "skip_dependents"))
      .when(flow("skip_dependents"))
      .then({ outcome: "unchanged", events: [] });
  });
});

describe("decideDeclaration: a whole declaration, one decision", () => {
  const spec = specification({
    fold: projectionOf,
    decide: (state, input: Omit<DeclarationInput, "now">) => decideDeclaration(state, { ...input, now: NOW }),
  });
  const etl = workflowSpecSchema.parse({ name: "etl", project: "p", account: "a" });
  const inEtl = (name: string) => taskSpec(name, { workflow: "etl" });
  const etlDeclared = on(workflowStream("etl"), { type: "WorkflowDeclared", data: { spec: etl } });
  const etlWithTwoTasks: Given[] = [
    ...etlDeclared,
    ...declaredTask("x", DAY, inEtl("x")),
    ...declaredTask("y", DAY, inEtl("y")),
  ];
  const retired = (name: string, reason?: string) =>
    on(taskStream(keyOf(name)), {
      type: "TaskRetired",
      data: { key: keyOf(name), ...(reason ? { reason } : {}) },
    });

  it("a task of the workflow that its declaration no longer names is retired, saying why", () => {
    spec
      .given(etlWithTwoTasks)
      .when({ workflows: [etl], connections: [], tasks: [inEtl("x")] })
      .then({
        connections: [],
        workflows: [{ name: "etl", outcome: "unchanged" }],
        tasks: [
          { task: idOf("x"), outcome: "unchanged", changes: [] },
          { task: idOf("y"), outcome: "retired", changes: [] },
        ],
        writes: [
          {
            streamId: taskStream(keyOf("y")),
            expectedRevision: 0n,
            events: [
              {
                type: "TaskRetired",
                data: { key: keyOf("y"), reason: "no longer in workflow etl's declaration" },
              },
            ],
          },
        ],
      });
  });

  it("a task given another schedule moves to its first interval, unless its current one is under way", () => {
    const at5 = taskSpec("t", { cron: "0 5 * * *" });
    const resets = (d: { writes: readonly { events: readonly { type: string; data: unknown }[] }[] }) =>
      d.writes.flatMap((w) => w.events.filter((e) => e.type === "IntervalReset").map((e) => e.data));
    spec
      .given(declaredTask("t"))
      .when({ workflows: [], connections: [], tasks: [at5] })
      .thenMatches((d) =>
        expect(resets(d)).toEqual([
          {
            key: keyOf("t"),
            logicalDate: "2026-11-28T05:00:00.000Z",
            nextRunDate: "2026-11-29T05:00:00.000Z",
            prevIntervalStart: null,
            reason: "schedule_changed",
          },
        ]),
      );
    // Where it stands is a slot of the new schedule too, whose interval ends sooner: due then.
    spec
      .given(declaredTask("t"))
      .when({ workflows: [], connections: [], tasks: [taskSpec("t", { cron: "0 2,14 * * *" })] })
      .thenMatches((d) =>
        expect(resets(d)).toMatchObject([
          { logicalDate: "2026-11-28T02:00:00.000Z", nextRunDate: "2026-11-28T14:00:00.000Z" },
        ]),
      );
    // A start date after where it stands: the first interval on or after that date.
    spec
      .given(declaredTask("t"))
      .when({
        workflows: [],
        connections: [],
        tasks: [taskSpec("t", { startDate: "2026-12-02T00:00:00.000Z" })],
      })
      .thenMatches((d) => expect(resets(d)).toMatchObject([{ logicalDate: "2026-12-02T02:00:00.000Z" }]));
    // Its current interval dispatched: it ends on the schedule it began on.
    spec
      .given(declaredTask("t"), instance("t", intended("t")))
      .when({ workflows: [], connections: [], tasks: [at5] })
      .thenMatches((d) => expect(resets(d)).toEqual([]));
    // A workflow's task: its run may hold the interval it stands at.
    spec
      .given(etlDeclared, declaredTask("x", DAY, inEtl("x")))
      .when({
        workflows: [],
        connections: [],
        tasks: [taskSpec("x", { workflow: "etl", cron: "0 5 * * *" })],
      })
      .thenMatches((d) => expect(resets(d)).toEqual([]));
  });

  it("an interval that began before the schedule changed is followed by the new one's, never before its start", () => {
    const task = {
      ...projectionOf(declaredTask("t")).tasks.get(idOf("t")),
      spec: { ...taskSpec("t", { cron: "0 5 * * *", startDate: "2026-12-02T00:00:00.000Z" }) },
    } as Parameters<typeof decideIntervalCompleted>[0];
    expect(decideIntervalCompleted(task).data).toMatchObject({
      logicalDate: DAY,
      nextLogicalDate: "2026-12-02T05:00:00.000Z",
      nextRunDate: "2026-12-03T05:00:00.000Z",
    });
    // Its start date not in the way: the next interval of the new schedule, due when it ends
    // (its run date stepped by the old one would make it due at its start, or a day late).
    const hourly = {
      ...task,
      spec: { ...task.spec, cron: "0 * * * *", startDate: "2026-11-01T00:00:00.000Z" },
    };
    expect(decideIntervalCompleted(hourly).data).toMatchObject({
      nextLogicalDate: "2026-11-28T03:00:00.000Z",
      nextRunDate: "2026-11-28T04:00:00.000Z",
    });
    // A backfill walks its own range, before the start date with --force: never cut short.
    const forced = { ...task, backfill: { from: DAY, until: "2026-11-29T02:00:00.000Z", backfillId: "b1" } };
    expect(decideIntervalCompleted(forced as typeof task).data.nextLogicalDate).toBe(
      "2026-11-28T05:00:00.000Z",
    );
    // A backfill's end returns the task where it stood, on the schedule it has now.
    const resume = {
      logicalDate: "2026-11-30T02:00:00.000Z",
      prevIntervalStart: "2026-11-29T02:00:00.000Z",
      nextRunDate: "2026-12-01T02:00:00.000Z",
    };
    const ending = (spec: Partial<TaskSpec>) =>
      ({
        ...task,
        spec: { ...task.spec, startDate: "2026-11-01T00:00:00.000Z", ...spec },
        backfill: { from: DAY, until: DAY, backfillId: "b2", resume },
      }) as typeof task;
    expect(decideIntervalCompleted(ending({})).data).toMatchObject({
      nextLogicalDate: "2026-11-30T05:00:00.000Z",
      nextRunDate: "2026-12-01T05:00:00.000Z",
    });
    expect(decideIntervalCompleted(ending({ startDate: "2026-12-03T00:00:00.000Z" })).data).toMatchObject({
      nextLogicalDate: "2026-12-03T05:00:00.000Z",
      nextRunDate: "2026-12-04T05:00:00.000Z",
    });
    // A resume point that is a slot of both schedules is due when its new interval ends: every
    // 30 minutes, then hourly, 03:00 runs at 04:00, not half-way through its hour.
    const halfHourly = {
      ...ending({ cron: "0 * * * *" }),
      backfill: {
        from: DAY,
        until: DAY,
        backfillId: "b3",
        resume: {
          logicalDate: "2026-11-30T03:00:00.000Z",
          prevIntervalStart: "2026-11-30T02:30:00.000Z",
          nextRunDate: "2026-11-30T03:30:00.000Z",
        },
      },
    } as typeof task;
    expect(decideIntervalCompleted(halfHourly).data).toMatchObject({
      nextLogicalDate: "2026-11-30T03:00:00.000Z",
      nextRunDate: "2026-11-30T04:00:00.000Z",
    });
    // Its schedule unchanged: the resume point as it was.
    expect(decideIntervalCompleted(ending({ cron: "0 2 * * *" })).data).toMatchObject({
      nextLogicalDate: resume.logicalDate,
      nextRunDate: resume.nextRunDate,
    });
  });

  it("plain tasks are never retired by a declaration that does not name them", () => {
    spec
      .given(declaredTask("plain"), etlWithTwoTasks)
      .when({ workflows: [], connections: [], tasks: [taskSpec("other")] })
      .thenMatches((d) => {
        expect(d.tasks.map((t) => [t.task, t.outcome])).toEqual([[idOf("other"), "declared"]]);
        expect(d.writes.map((w) => w.streamId)).toEqual([taskStream(keyOf("other"))]);
      });
  });

  it("a task already retired is not retired again", () => {
    spec
      .given(etlWithTwoTasks, retired("y"))
      .when({ workflows: [etl], connections: [], tasks: [inEtl("x")] })
      .then({
        connections: [],
        workflows: [{ name: "etl", outcome: "unchanged" }],
        tasks: [{ task: idOf("x"), outcome: "unchanged", changes: [] }],
        writes: [],
      });
  });

  it("a retired task declared again is refused, naming it", () => {
    spec
      .given(etlWithTwoTasks, retired("y", "no longer in workflow etl's declaration"))
      .when({ workflows: [etl], connections: [], tasks: [inEtl("x"), inEtl("y")] })
      .thenThrows("validation", /p\/a\/y\/ALL.*retired.*revive/);
  });

  it("with revive, a retired task is revived, and what changed in its declaration is recorded", () => {
    const after = taskSpec("y", { workflow: "etl", leaseSeconds: 60 });
    const changes = [{ field: "leaseSeconds", from: 30, to: 60 }];
    spec
      .given(etlWithTwoTasks, retired("y"))
      .when({ workflows: [etl], connections: [], tasks: [inEtl("x"), after], revive: true })
      .then({
        connections: [],
        workflows: [{ name: "etl", outcome: "unchanged" }],
        tasks: [
          { task: idOf("x"), outcome: "unchanged", changes: [] },
          { task: idOf("y"), outcome: "revived", changes },
        ],
        writes: [
          {
            streamId: taskStream(keyOf("y")),
            expectedRevision: 1n,
            events: [
              { type: "TaskRevived", data: { key: keyOf("y"), reason: "declared again with revive" } },
              { type: "TaskDeclarationChanged", data: { key: keyOf("y"), spec: after, changes } },
            ],
          },
        ],
      });
  });

  it("a revived task folds back to active, where it stopped", () => {
    const revived = on(taskStream(keyOf("y")), {
      type: "TaskRevived",
      data: { key: keyOf("y"), reason: "declared again with revive" },
    });
    expect(spec.given(etlWithTwoTasks, retired("y"), revived).state().tasks.get(idOf("y"))).toMatchObject({
      status: "active",
      logicalDate: DAY,
      revision: 2n,
    });
  });

  it("every write expects its stream's revision: connections, then workflows, then tasks", () => {
    const wh = connectionSpecSchema.parse({ name: "wh", maxParallelism: 2 });
    const etlFailFast = workflowSpecSchema.parse({
      name: "etl",
      project: "p",
      account: "a",
      failurePolicy: "fail_fast",
    });
    spec
      .given(
        on(connectionStream("wh"), {
          type: "ConnectionDeclared",
          data: { spec: connectionSpecSchema.parse({ name: "wh" }) },
        }),
        etlWithTwoTasks,
      )
      .when({ workflows: [etlFailFast], connections: [wh], tasks: [inEtl("x"), inEtl("z")] })
      .thenMatches((d) => {
        expect(d.writes.map((w) => [w.streamId, w.expectedRevision, w.events.map((e) => e.type)])).toEqual([
          [connectionStream("wh"), 0n, ["ConnectionDeclared"]],
          [workflowStream("etl"), 0n, ["WorkflowDeclared"]],
          [taskStream(keyOf("z")), "no_stream", ["TaskDeclared"]],
          [taskStream(keyOf("y")), 0n, ["TaskRetired"]],
        ]);
      });
  });
});

describe("decideWorkflowRetirement: a workflow and all its tasks, one atomic write", () => {
  const spec = specification({
    fold: projectionOf,
    decide: (state, input: { name: string; reason?: string }) =>
      decideWorkflowRetirement(state, input.name, input.reason),
  });
  const etl = workflowSpecSchema.parse({ name: "etl", project: "p", account: "a" });
  const inEtl = (name: string) => taskSpec(name, { workflow: "etl" });
  const etlWithThreeTasks: Given[] = [
    ...on(workflowStream("etl"), { type: "WorkflowDeclared", data: { spec: etl } }),
    ...declaredTask("y", DAY, inEtl("y")),
    ...declaredTask("x", DAY, inEtl("x")),
    ...declaredTask("gone", DAY, inEtl("gone")),
    ...on(taskStream(keyOf("gone")), { type: "TaskRetired", data: { key: keyOf("gone") } }),
    ...declaredTask("plain"),
  ];

  it("retires every task of the workflow not retired yet, then the workflow, each at its revision", () => {
    spec
      .given(etlWithThreeTasks)
      .when({ name: "etl", reason: "replaced by etl_v2" })
      .then({
        kind: "retire",
        workflow: etl,
        tasks: [idOf("x"), idOf("y")],
        writes: [
          {
            streamId: taskStream(keyOf("x")),
            expectedRevision: 0n,
            events: [{ type: "TaskRetired", data: { key: keyOf("x"), reason: "replaced by etl_v2" } }],
          },
          {
            streamId: taskStream(keyOf("y")),
            expectedRevision: 0n,
            events: [{ type: "TaskRetired", data: { key: keyOf("y"), reason: "replaced by etl_v2" } }],
          },
          {
            streamId: workflowStream("etl"),
            expectedRevision: 0n,
            events: [
              {
                type: "WorkflowRetired",
                data: { name: "etl", tasks: [keyOf("x"), keyOf("y")], reason: "replaced by etl_v2" },
              },
            ],
          },
        ],
      });
  });

  it("without a reason, each task says which workflow's retirement retired it", () => {
    spec
      .given(etlWithThreeTasks)
      .when({ name: "etl" })
      .thenMatches((d) => {
        if (d.kind !== "retire") throw new Error(d.kind);
        expect(d.writes[0]?.events[0]).toEqual({
          type: "TaskRetired",
          data: { key: keyOf("x"), reason: "workflow etl retired" },
        });
        expect(d.writes.at(-1)?.events[0]?.data).toEqual({ name: "etl", tasks: [keyOf("x"), keyOf("y")] });
      });
  });

  it("a workflow declared nowhere is refused with the names that are; a retired one as retired", () => {
    spec
      .given(etlWithThreeTasks)
      .when({ name: "elt" })
      .then({ kind: "unknown", known: ["etl"] });
    const retiredEtl = on(workflowStream("etl"), {
      type: "WorkflowRetired",
      data: { name: "etl", tasks: [keyOf("x"), keyOf("y")] },
    });
    spec.given(etlWithThreeTasks, retiredEtl).when({ name: "etl" }).then({ kind: "retired" });
    // Once retired, it is no longer declared: its name may be declared again.
    expect(projectionOf([...etlWithThreeTasks, ...retiredEtl]).workflows.has("etl")).toBe(false);
  });
});
