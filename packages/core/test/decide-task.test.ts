import {
  admitTask,
  connectionSpecSchema,
  connectionStream,
  type DecideOptions,
  type DomainEvent,
  decideTask,
  describeDecision,
  instanceStream,
  projectedSlots,
  runStream,
  type SchedulerProjection,
  type Slots,
  type TaskDecision,
  taskStream,
  workflowSpecSchema,
  workflowStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  failed,
  idOf,
  instance,
  intended,
  intervalReset,
  keyOf,
  NEXT_DAY,
  started,
  succeeded,
  taskSpec,
  tokenOf,
} from "./support/events.js";
import { type Given, on, projectionOf, specification } from "./support/specification.js";

/**
 * decideTask, given / when / then: given a history, when the task is decided at `now` (with the
 * projection's slots unless the case gives its own), then this decision.
 */
interface When {
  readonly task: string;
  readonly now: number;
  readonly slots?: Slots;
  readonly options?: DecideOptions;
}
const decide = (p: SchedulerProjection, w: When): TaskDecision => {
  const task = p.tasks.get(idOf(w.task));
  if (!task) throw new Error(`no task ${w.task} in the history`);
  return decideTask(p, task, w.now, w.slots ?? projectedSlots(p), w.options);
};
const spec = specification({ fold: projectionOf, decide });

/** Every interval below is due from NEXT_DAY: before it nothing is due, after it DAY is. */
const BEFORE = Date.parse(NEXT_DAY) - 1000;
const DUE = Date.parse(NEXT_DAY) + 1000;

const connection = (name: string, maxParallelism: number): Given[] =>
  on(connectionStream(name), {
    type: "ConnectionDeclared",
    data: { spec: connectionSpecSchema.parse({ name, maxParallelism }) },
  });
const workflow = (
  name: string,
  o: { maxActiveRuns?: number; maxActiveTasks?: number; failurePolicy?: "fail_fast" },
) =>
  on(workflowStream(name), {
    type: "WorkflowDeclared",
    data: { spec: workflowSpecSchema.parse({ name, project: "p", account: "a", ...o }) },
  });
const run = (workflow: string, logicalDate: string, tasks: string[]): Given[] =>
  on(runStream(`${workflow}@${logicalDate}`), {
    type: "RunStarted",
    data: {
      runId: `${workflow}@${logicalDate}`,
      workflow,
      logicalDate,
      tasks: tasks.map(keyOf),
      trigger: "schedule",
      params: {},
    },
  });
/** An attempt of `name` at DAY, queued on `conn` (and in `runId`, if given). */
const queuedOn = (name: string, conn: string | null, runId?: string): Given[] =>
  on(instanceStream(keyOf(name), DAY), {
    type: "DispatchIntended",
    data: { ...intended(name, runId ? { runId } : {}).data, ...(conn ? { connection: conn } : {}) },
  } as DomainEvent);

describe("decideTask: where the task's own interval stands", () => {
  it("not due before its next_run_date", () => {
    spec.given(declaredTask("t")).when({ task: "t", now: BEFORE }).then({ kind: "not_due", at: NEXT_DAY });
  });

  it("ready once due, with no parent, limit or attempt in the way", () => {
    spec
      .given(declaredTask("t"))
      .when({ task: "t", now: DUE })
      .then({ kind: "ready", retry: null, run: null });
  });

  it("past its schedule's end date: ended, even when not due (no timer for it)", () => {
    const ended = taskSpec("t", { endDate: "2026-11-20T00:00:00.000Z" });
    spec
      .given(declaredTask("t", DAY, ended))
      .when({ task: "t", now: BEFORE })
      .then({ kind: "schedule_ended", endDate: "2026-11-20T00:00:00.000Z" });
  });

  it("catch-up off and days behind: jumps to the latest interval that has ended", () => {
    const noCatchup = taskSpec("t", { catchup: false });
    spec
      .given(declaredTask("t", DAY, noCatchup))
      .when({ task: "t", now: Date.parse("2026-12-01T12:00:00.000Z") })
      .thenMatches((d) => {
        expect(d.kind).toBe("catchup_jump");
        if (d.kind !== "catchup_jump") return;
        expect(d.event.data).toMatchObject({
          logicalDate: "2026-11-30T02:00:00.000Z",
          reason: "catchup_disabled",
        });
      });
  });

  it("paused: with the reason the pause gave", () => {
    spec
      .given(
        declaredTask("t"),
        on(taskStream(keyOf("t")), { type: "TaskPaused", data: { key: keyOf("t"), reason: "migration" } }),
      )
      .when({ task: "t", now: DUE })
      .then({ kind: "paused", reason: "migration" });
  });

  it("paused and resumed: ready, the reason forgotten", () => {
    const k = keyOf("t");
    spec
      .given(
        declaredTask("t"),
        on(
          taskStream(k),
          { type: "TaskPaused", data: { key: k, reason: "migration" } },
          { type: "TaskResumed", data: { key: k } },
        ),
      )
      .when({ task: "t", now: DUE })
      .then({ kind: "ready", retry: null, run: null });
  });

  it("retired: nothing else matters", () => {
    spec
      .given(
        declaredTask("t"),
        on(taskStream(keyOf("t")), { type: "TaskRetired", data: { key: keyOf("t") } }),
      )
      .when({ task: "t", now: DUE })
      .then({ kind: "retired" });
  });

  it("blocked while a parent has not finished the interval that covers its own", () => {
    const child = taskSpec("child", { parents: [keyOf("parent")] });
    spec
      .given(declaredTask("parent"), declaredTask("child", DAY, child))
      .when({ task: "child", now: DUE })
      .thenMatches((d) => {
        expect(d.kind).toBe("blocked");
        if (d.kind === "blocked") expect(d.reasons).toMatchObject([{ kind: "parent_behind", actual: null }]);
      });
  });
});

describe("decideTask: the current interval's attempt", () => {
  it("queued, then running", () => {
    spec
      .given(declaredTask("t"), instance("t", intended("t")))
      .when({ task: "t", now: DUE })
      .thenMatches((d) => expect(d.kind).toBe("queued"));
    spec
      .given(declaredTask("t"), instance("t", intended("t"), started("t")))
      .when({ task: "t", now: DUE })
      .thenMatches((d) => {
        expect(d.kind).toBe("running");
        if (d.kind === "running") expect(d.attempt?.workerId).toBe("w-1");
      });
  });

  it("a success completes the interval: the success path's event", () => {
    spec
      .given(declaredTask("t"), instance("t", intended("t"), started("t"), succeeded("t")))
      .when({ task: "t", now: DUE })
      .thenMatches((d) => {
        expect(d.kind).toBe("complete");
        if (d.kind === "complete")
          expect(d.event.data).toEqual({
            key: keyOf("t"),
            logicalDate: DAY,
            nextLogicalDate: NEXT_DAY,
            nextRunDate: "2026-11-30T02:00:00.000Z",
            attempt: 1,
          });
      });
  });

  it("a failure with a retry due later waits for it; once due, the retry is ready", () => {
    const retryAt = new Date(DUE + 60_000).toISOString();
    const history = [declaredTask("t"), instance("t", intended("t"), started("t"), failed("t", 1, retryAt))];
    spec
      .given(...history)
      .when({ task: "t", now: DUE })
      .thenMatches((d) => expect(d).toMatchObject({ kind: "retry_at", at: retryAt }));
    spec
      .given(...history)
      .when({ task: "t", now: DUE + 61_000 })
      .thenMatches((d) => {
        expect(d.kind).toBe("ready");
        if (d.kind === "ready") expect(d.retry?.attempts.at(-1)?.token).toBe(tokenOf("t", 1));
      });
  });

  it("a due retry of a paused task waits for the resume", () => {
    const retryAt = new Date(DUE).toISOString();
    spec
      .given(
        declaredTask("t"),
        instance("t", intended("t"), started("t"), failed("t", 1, retryAt)),
        on(taskStream(keyOf("t")), { type: "TaskPaused", data: { key: keyOf("t") } }),
      )
      .when({ task: "t", now: DUE + 1000 })
      .then({ kind: "paused", reason: null });
  });

  it("a failure with no retry left: record it; once recorded, the task stays at that interval", () => {
    const history = [declaredTask("t"), instance("t", intended("t"), started("t"), failed("t"))];
    spec
      .given(...history)
      .when({ task: "t", now: DUE })
      .thenMatches((d) => {
        expect(d.kind).toBe("fail");
        if (d.kind === "fail") expect(d.event.data).toMatchObject({ logicalDate: DAY, state: "failed" });
      });
    spec
      .given(
        ...history,
        on(taskStream(keyOf("t")), {
          type: "IntervalFailed",
          data: { key: keyOf("t"), logicalDate: DAY, state: "failed", reason: "exit code 1" },
        }),
      )
      .when({ task: "t", now: DUE + 86_400_000 })
      .thenMatches((d) =>
        expect(d).toMatchObject({ kind: "failed", failure: { logicalDate: DAY, state: "failed" } }),
      );
  });

  it("an attempt from before a backfill moved the task back is still in flight: held", () => {
    spec
      .given(declaredTask("t"), instance("t", intended("t"), started("t")), intervalReset("t", DAY))
      .when({ task: "t", now: DUE })
      .then({ kind: "held", hold: { on: "earlier_attempt", logicalDate: DAY, attempt: 1 } });
  });

  it("a payload that does not render: held with the message", () => {
    spec
      .given(declaredTask("t"))
      .when({
        task: "t",
        now: DUE,
        options: { renderProblem: () => "operator.command: undefined variable confg" },
      })
      .then({
        kind: "held",
        hold: { on: "render_failed", message: "operator.command: undefined variable confg" },
      });
  });
});

describe("decideTask: the limits a task free to start must fit in", () => {
  it("its connection's slots: held with the numbers while another attempt holds the only one", () => {
    spec
      .given(
        connection("pg", 1),
        declaredTask("a", DAY, taskSpec("a", { connection: "pg" })),
        declaredTask("b", DAY, taskSpec("b", { connection: "pg" })),
        queuedOn("a", "pg"),
      )
      .when({ task: "b", now: DUE })
      .then({ kind: "held", hold: { on: "connection", connection: "pg", inUse: 1, limit: 1 } });
  });

  it("a connection not declared yet: held, naming it", () => {
    spec
      .given(declaredTask("b", DAY, taskSpec("b", { connection: "pg" })))
      .when({ task: "b", now: DUE })
      .then({ kind: "held", hold: { on: "connection_undeclared", connection: "pg" } });
  });

  it("its run's maxActiveTasks: held with the run's numbers", () => {
    spec
      .given(
        workflow("etl", { maxActiveTasks: 1 }),
        declaredTask("a", DAY, taskSpec("a", { workflow: "etl" })),
        declaredTask("b", DAY, taskSpec("b", { workflow: "etl" })),
        run("etl", DAY, ["a", "b"]),
        queuedOn("a", null, `etl@${DAY}`),
      )
      .when({ task: "b", now: DUE })
      .then({
        kind: "held",
        hold: { on: "run_slots", runId: `etl@${DAY}`, workflow: "etl", logicalDate: DAY, inUse: 1, limit: 1 },
      });
  });

  it("its workflow's maxActiveRuns: a new run waits for the one going", () => {
    const earlier = "2026-11-27T02:00:00.000Z";
    spec
      .given(
        workflow("etl", { maxActiveRuns: 1 }),
        declaredTask("a", DAY, taskSpec("a", { workflow: "etl" })),
        run("etl", earlier, ["a"]),
      )
      .when({ task: "a", now: DUE })
      .then({ kind: "held", hold: { on: "active_runs", workflow: "etl", active: 1, limit: 1 } });
  });

  it("a run that failed fast starts nothing new", () => {
    spec
      .given(
        workflow("etl", { failurePolicy: "fail_fast" }),
        declaredTask("a", DAY, taskSpec("a", { workflow: "etl" })),
        declaredTask("b", DAY, taskSpec("b", { workflow: "etl" })),
        run("etl", DAY, ["a", "b"]),
        queuedOn("a", null, `etl@${DAY}`),
        on(instanceStream(keyOf("a"), DAY), started("a"), failed("a")),
      )
      .when({ task: "b", now: DUE })
      .then({ kind: "held", hold: { on: "run_failed_fast", runId: `etl@${DAY}` } });
  });

  it("ready in a workflow: the run it joins, or starts", () => {
    spec
      .given(workflow("etl", {}), declaredTask("a", DAY, taskSpec("a", { workflow: "etl" })))
      .when({ task: "a", now: DUE })
      .then({
        kind: "ready",
        retry: null,
        run: {
          runId: `etl@${DAY}`,
          workflow: "etl",
          logicalDate: DAY,
          start: { trigger: "schedule", revision: "no_stream" },
        },
      });
  });

  it("admitTask on shared slots: the first of two tasks takes the only slot, the second is held", () => {
    const p = projectionOf(
      [
        connection("pg", 1),
        declaredTask("a", DAY, taskSpec("a", { connection: "pg" })),
        declaredTask("b", DAY, taskSpec("b", { connection: "pg" })),
      ].flat(),
    );
    let taken = 0;
    const slots: Slots = { ...projectedSlots(p), connectionInUse: () => taken };
    const ready = { kind: "ready", retry: null, run: null } as const;
    const first = admitTask(p, p.tasks.get(idOf("a")) as never, ready, slots);
    expect(first.kind).toBe("ready");
    taken += 1;
    expect(admitTask(p, p.tasks.get(idOf("b")) as never, ready, slots)).toEqual({
      kind: "held",
      hold: { on: "connection", connection: "pg", inUse: 1, limit: 1 },
    });
  });
});

describe("describeDecision: the decision in words", () => {
  it("a connection's holders, with since when", () => {
    const p = projectionOf(
      [
        connection("pg", 1),
        declaredTask("a", DAY, taskSpec("a", { connection: "pg" })),
        declaredTask("b", DAY, taskSpec("b", { connection: "pg" })),
        queuedOn("a", "pg"),
      ].flat(),
    );
    const d = decideTask(p, p.tasks.get(idOf("b")) as never, DUE);
    // The intent was recorded at the helper's default instant, another day than DUE: the whole instant.
    expect(describeDecision(d, p, DAY, DUE)).toEqual({
      condition: "held",
      reasons: ["waiting for a slot on connection pg (1 of 1 in use: p/a/a/ALL since 2026-11-30T00:00:00Z)"],
    });
  });

  it("a retry's time is shown to the second, never before it is due", () => {
    const d: TaskDecision = { kind: "retry_at", at: "2026-11-28T03:15:29.929Z", attempt: null };
    expect(describeDecision(d, projectionOf([]), DAY, DUE).reasons[0]).toContain(
      "retry due 2026-11-28T03:15:30Z",
    );
    const exact: TaskDecision = { kind: "retry_at", at: "2026-11-28T03:15:29.000Z", attempt: null };
    expect(describeDecision(exact, projectionOf([]), DAY, DUE).reasons[0]).toContain(
      "retry due 2026-11-28T03:15:29Z",
    );
  });

  it("an upstream_failed interval shows as itself, never as failed", () => {
    const d: TaskDecision = {
      kind: "failed",
      failure: { logicalDate: DAY, state: "upstream_failed", reason: "p/a/up/ALL failed" },
      attempt: null,
    };
    expect(describeDecision(d, projectionOf([]), DAY, DUE)).toEqual({
      condition: "upstream_failed",
      reasons: [
        "blocked by its own upstream_failed interval 2026-11-28T02:00Z (a task never advances past an interval it did not complete: retry it, or mark it succeeded or skipped)",
        "2026-11-28T02:00Z ended upstream_failed: p/a/up/ALL failed",
      ],
    });
  });
});
