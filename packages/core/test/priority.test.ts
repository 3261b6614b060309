import {
  type Claim,
  claimOf,
  compareWaiters,
  connectionSpecSchema,
  connectionStream,
  type DeclarationResult,
  type DomainEvent,
  explainTask,
  formatDeclarationIssue,
  instanceStream,
  runStream,
  taskStream,
  upcastEventData,
  validateDeclarations,
  workflowSpecSchema,
  workflowStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { DAY, declaredTask, idOf, intended, keyOf, NEXT_DAY, taskSpec } from "./support/events.js";
import { type Given, on, projectionOf } from "./support/specification.js";

const DUE = Date.parse(NEXT_DAY) + 1000;
const EARLIER = "2026-11-27T02:00:00.000Z";

const connection = (name: string, maxParallelism: number): Given[] =>
  on(connectionStream(name), {
    type: "ConnectionDeclared",
    data: { spec: connectionSpecSchema.parse({ name, maxParallelism }) },
  });
/** A task on connection `wh`, at `priority` (and `rule`), with these parents. */
const onWh = (
  name: string,
  o: { priority?: number; priorityRule?: "downstream"; parents?: string[]; logicalDate?: string } = {},
): Given[] =>
  declaredTask(
    name,
    o.logicalDate ?? DAY,
    taskSpec(name, {
      connection: "wh",
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
      ...(o.priorityRule ? { priorityRule: o.priorityRule } : {}),
      parents: (o.parents ?? []).map(keyOf),
    }),
  );
/** An attempt of `name` at DAY holding a slot of `wh`. */
const holding = (name: string): Given[] =>
  on(instanceStream(keyOf(name), DAY), {
    type: "DispatchIntended",
    data: { ...intended(name).data, connection: "wh" },
  } as DomainEvent);
/** A backfill window set on `name` at `logicalDate`, at `priority` if given. */
const backfilled = (name: string, logicalDate: string, priority?: number): Given[] =>
  on(taskStream(keyOf(name)), {
    type: "IntervalReset",
    data: {
      key: keyOf(name),
      logicalDate,
      nextRunDate: NEXT_DAY,
      prevIntervalStart: null,
      reason: "backfill",
      until: logicalDate,
      resume: { logicalDate: DAY, nextRunDate: NEXT_DAY, prevIntervalStart: null },
      backfillId: "bf-1",
      ...(priority !== undefined ? { priority } : {}),
    },
  });

/** The ids of the tasks in the order a free slot goes to them. */
function order(history: readonly Given[], names: string[]): string[] {
  const p = projectionOf(history);
  return names
    .map((n) => p.tasks.get(idOf(n)))
    .map((t) => {
      if (!t) throw new Error("no such task");
      return { claim: claimOf(t, p.weights), logicalDate: t.logicalDate, since: Infinity, id: t.id };
    })
    .sort(compareWaiters)
    .map((w) => w.id.split("/")[2] as string);
}

describe("the order free slots go in: priority first, then the longest waiting", () => {
  it("given priorities, when ordered, then the highest first whatever the interval", () => {
    const history = [
      ...onWh("low", { priority: -3, logicalDate: EARLIER }),
      ...onWh("plain", { logicalDate: EARLIER }),
      ...onWh("high", { priority: 5 }),
    ];
    expect(order(history, ["low", "plain", "high"])).toEqual(["high", "plain", "low"]);
  });

  it("given equal priorities, when ordered, then the older interval first, then by id (today's order)", () => {
    const history = [...onWh("b"), ...onWh("c", { logicalDate: EARLIER }), ...onWh("a")];
    expect(order(history, ["b", "c", "a"])).toEqual(["c", "a", "b"]);
  });

  it("given a backfill without a priority, when ordered, then after every scheduled interval, even one of a lower priority", () => {
    const history = [
      ...onWh("bf", { priority: 50 }),
      ...backfilled("bf", EARLIER),
      ...onWh("low", { priority: -1000 }),
    ];
    expect(order(history, ["bf", "low"])).toEqual(["low", "bf"]);
  });

  it("given a backfill with its own priority, when ordered, then it competes at that priority", () => {
    const history = [
      ...onWh("bf"),
      ...backfilled("bf", EARLIER, 7),
      ...onWh("five", { priority: 5 }),
      ...onWh("nine", { priority: 9 }),
    ];
    expect(order(history, ["five", "bf", "nine"])).toEqual(["nine", "bf", "five"]);
  });

  it("given two backfills without a priority, when ordered, then by their tasks' weights", () => {
    const history = [
      ...onWh("x", { priority: 1 }),
      ...backfilled("x", EARLIER),
      ...onWh("y", { priority: 2 }),
      ...backfilled("y", EARLIER),
    ];
    expect(order(history, ["x", "y"])).toEqual(["y", "x"]);
  });
});

describe("priorityRule downstream: a task's weight adds its descendants' priorities", () => {
  // a -> b -> d, a -> c -> d (a diamond: d counted once)
  const diamond = [
    ...onWh("a", { priority: 1, priorityRule: "downstream" }),
    ...onWh("b", { priority: 2, parents: ["a"] }),
    ...onWh("c", { priority: 3, parents: ["a"] }),
    ...onWh("d", { priority: 10, parents: ["b", "c"] }),
    ...onWh("e", { priority: 15 }),
  ];

  it("given a diamond below it, when weighed, then each descendant counts once", () => {
    const p = projectionOf(diamond);
    const a = p.tasks.get(idOf("a"));
    if (!a) throw new Error("no a");
    expect(p.weights.weightOf(a)).toBe(1 + 2 + 3 + 10);
    expect(order(diamond, ["a", "e", "b"])).toEqual(["a", "e", "b"]);
  });

  it("given a descendant's declaration changes, when weighed again, then the new priority counts", () => {
    const p = projectionOf(diamond);
    const a = () => p.tasks.get(idOf("a")) ?? (undefined as never);
    expect(p.weights.weightOf(a())).toBe(16);
    const position = p.position + 1n;
    p.apply({
      type: "TaskDeclarationChanged",
      data: {
        key: keyOf("d"),
        spec: taskSpec("d", { connection: "wh", priority: -4, parents: [keyOf("b"), keyOf("c")] }),
        changes: [{ field: "priority", from: 10, to: -4 }],
      },
      streamId: taskStream(keyOf("d")),
      revision: 1n,
      position,
      metadata: { recordedAt: DAY },
    });
    expect(p.weights.weightOf(a())).toBe(1 + 2 + 3 - 4);
  });

  it("given an absolute task, when weighed, then only its own priority", () => {
    const p = projectionOf(diamond);
    const b = p.tasks.get(idOf("b"));
    if (!b) throw new Error("no b");
    expect(p.weights.weightOf(b)).toBe(2);
    expect(claimOf(b, p.weights)).toEqual({ backfill: false, weight: 2 } satisfies Claim);
  });
});

describe("why of a task held for a connection's slot names who is ahead of it", () => {
  const history = [
    ...connection("wh", 1),
    ...onWh("busy"),
    ...holding("busy"),
    ...onWh("me"),
    ...onWh("urgent", { priority: 5 }),
    ...onWh("old", { logicalDate: EARLIER }),
    ...onWh("later", { priority: -2, logicalDate: EARLIER }),
  ];

  it("given two ahead of it, when explained, then each is named with why, and those behind are not", () => {
    const why = explainTask(projectionOf(history), idOf("me"), DUE);
    expect(why.condition).toBe("held");
    expect(why.reasons[0]).toContain("waiting for a slot on connection wh (1 of 1 in use: p/a/busy/ALL");
    expect(why.reasons[0]).toContain(
      "2 ahead of it (its priority 0): p/a/urgent/ALL 2026-11-28T02:00Z (priority 5), p/a/old/ALL 2026-11-27T02:00Z (waiting longer)",
    );
    expect(why.reasons[0]).not.toContain("p/a/later/ALL");
  });

  it("given the highest priority, when explained, then it is first in line", () => {
    const why = explainTask(projectionOf(history), idOf("urgent"), DUE);
    expect(why.reasons[0]).toContain("first in line for it (its priority 5)");
  });

  it("given a backfill's interval, when explained, then the scheduled ones are ahead of it", () => {
    const why = explainTask(projectionOf([...history, ...backfilled("later", EARLIER)]), idOf("later"), DUE);
    expect(why.reasons[0]).toContain("3 ahead of it (its a backfill's, after the schedule, weight -2)");
    expect(why.reasons[0]).toContain(
      "p/a/me/ALL 2026-11-28T02:00Z (priority 0: a backfill's intervals come after it)",
    );
  });
});

describe("why of a task held for a run's slot names those ahead of it by priority", () => {
  const RUN = `etl@${DAY}`;
  const inRun = (name: string, priority?: number): Given[] =>
    declaredTask(
      name,
      DAY,
      taskSpec(name, { workflow: "etl", ...(priority !== undefined ? { priority } : {}) }),
    );
  const history = [
    ...on(workflowStream("etl"), {
      type: "WorkflowDeclared",
      data: {
        spec: workflowSpecSchema.parse({ name: "etl", project: "p", account: "a", maxActiveTasks: 1 }),
      },
    }),
    ...inRun("busy"),
    ...inRun("me"),
    ...inRun("peer"),
    ...inRun("urgent", 3),
    ...on(runStream(RUN), {
      type: "RunStarted",
      data: {
        runId: RUN,
        workflow: "etl",
        logicalDate: DAY,
        tasks: ["busy", "me", "peer", "urgent"].map(keyOf),
        trigger: "schedule",
        params: {},
      },
    }),
    ...on(instanceStream(keyOf("busy"), DAY), intended("busy", { runId: RUN })),
  ];

  it("given a higher priority and one alike, when explained, then the first named and the other counted", () => {
    const why = explainTask(projectionOf(history), idOf("me"), DUE);
    expect(why.reasons).toEqual([
      `waiting for a slot in run etl@2026-11-28T02:00Z (1 of 1 in use); 1 ahead of it (its priority 0): p/a/urgent/ALL 2026-11-28T02:00Z (priority 3); 1 more at its priority, served in the order they began to wait`,
    ]);
  });

  it("given the highest priority, when explained, then first in line", () => {
    const why = explainTask(projectionOf(history), idOf("urgent"), DUE);
    expect(why.reasons[0]).toMatch(/; first in line for it \(its priority 3\)$/);
  });
});

describe("priority in declarations", () => {
  const doc = (task: Record<string, unknown>, workflow: Record<string, unknown> = {}) => [
    {
      filename: "p.yaml",
      document: {
        workflows: [
          {
            name: "w",
            project: "p",
            account: "a",
            cron: "0 2 * * *",
            startDate: "2026-11-01T00:00:00Z",
            ...workflow,
            tasks: [
              { name: "t", operator: { type: "noop" }, ...task },
              { name: "u", operator: { type: "noop" } },
            ],
          },
        ],
      },
    },
  ];
  const ok = (r: DeclarationResult) => {
    if (!r.ok) throw new Error(r.errors.map(formatDeclarationIssue).join("\n"));
    return r;
  };
  const errors = (r: DeclarationResult) => (r.ok ? [] : r.errors.map(formatDeclarationIssue));

  it("given a workflow's priority, when a task sets its own, then the task's wins and the others inherit", () => {
    const r = ok(validateDeclarations(doc({ priority: 9 }, { priority: 4, priorityRule: "downstream" })));
    const spec = (n: string) => r.tasks.find((t) => t.key.name === n);
    expect(spec("t")).toMatchObject({ priority: 9, priorityRule: "downstream" });
    expect(spec("u")).toMatchObject({ priority: 4, priorityRule: "downstream" });
  });

  it("given none, when declared, then the spec carries none (0 and absolute)", () => {
    const r = ok(validateDeclarations(doc({ priority: 0, priorityRule: "absolute" })));
    expect(r.tasks[0]).not.toHaveProperty("priority");
    expect(r.tasks[0]).not.toHaveProperty("priorityRule");
  });

  it.each([
    [{ priority: 1001 }, "a priority is an integer from -1000 to 1000"],
    [{ priority: 1.5 }, "a priority is an integer from -1000 to 1000"],
    [{ priority: "high" }, "a priority is an integer from -1000 to 1000"],
    [{ priorityRule: "upstream" }, "priorityRule is absolute or downstream"],
  ])("given %j, when declared, then a clear error at the field", (field, message) => {
    const e = errors(validateDeclarations(doc(field)));
    expect(e.join("\n")).toContain(message);
    expect(e.join("\n")).toContain(`workflows[0].tasks[0].${Object.keys(field)[0]}`);
  });

  it("given a connection with the old sortOrder, when declared, then a warning and the field left out", () => {
    const r = ok(
      validateDeclarations([
        { filename: "c.yaml", document: { connections: [{ name: "wh", sortOrder: "priority" }] } },
      ]),
    );
    expect(r.connections[0]).not.toHaveProperty("sortOrder");
    expect(r.warnings.map(formatDeclarationIssue).join("\n")).toContain("connections[0].sortOrder");
  });

  it("given a ConnectionDeclared v1 with sortOrder in an old log, when read, then it reads without it", () => {
    const e = upcastEventData("ConnectionDeclared", 1, {
      spec: { name: "wh", operators: [], maxParallelism: 2, sortOrder: "logical_date", config: {} },
    });
    expect(e.data).toEqual({ spec: { name: "wh", operators: [], maxParallelism: 2, config: {} } });
  });
});
