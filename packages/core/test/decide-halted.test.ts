import {
  type DomainEvent,
  decideHalted,
  decideRun,
  decideTask,
  explainTask,
  formatTaskKey,
  type HaltedCommand,
  type HaltedDecision,
  type HaltedInput,
  instanceStream,
  nextStepsFor,
  PROCESS_ENDED,
  retryAfterFailure,
  runStream,
  type SchedulerProjection,
  taskStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  declaredWorkflow,
  failed,
  idOf,
  instance,
  intended,
  keyOf,
  NEXT_DAY,
  RECORDED_MS,
  runIdOf,
  runStarted,
  started,
  streamOf,
  succeeded,
  taskSpec,
  tokenOf,
} from "./support/events.js";
import {
  type Given,
  instanceOf,
  on,
  projectionOf,
  recorded,
  specification,
} from "./support/specification.js";

const BY = "cli:alice@laptop:1";

/** The decider's input as the shell reads it: here every stream from the folded history. */
function inputOf(p: SchedulerProjection, name: string, now = RECORDED_MS, logicalDate = DAY): HaltedInput {
  const task = p.tasks.get(idOf(name));
  const wf = task?.spec.workflow;
  const run = wf === undefined ? null : p.runs.get(`${wf}@${logicalDate}`);
  return {
    tasks: p.tasks,
    childrenOf: (t) => p.children.of(t),
    instances: p.instances,
    taskId: idOf(name),
    logicalDate,
    instance: p.instances.get(streamOf(name, logicalDate)),
    run: wf === undefined ? null : { state: run, revision: run ? run.revision : "no_stream" },
    now,
    by: BY,
  };
}

const spec = (name: string, now = RECORDED_MS, logicalDate = DAY) =>
  specification({
    fold: projectionOf,
    decide: (p: SchedulerProjection, command: HaltedCommand) =>
      decideHalted(inputOf(p, name, now, logicalDate), command),
  });

/** The history with the decision's writes appended, as the log would record them. */
function after(history: readonly Given[], d: HaltedDecision): Given[] {
  return [...history, ...d.writes.flatMap((w) => on(w.streamId, ...w.events))];
}

const intervalFailed = (name: string, state: "failed" | "upstream_failed" = "failed"): Given[] =>
  on(taskStream(keyOf(name)), {
    type: "IntervalFailed",
    data: { key: keyOf(name), logicalDate: DAY, state, reason: "exit code 1" },
  });

/** A task that failed its interval for good: attempt 1 and its stop. */
const failedTask = (name = "t", maxAttempts = 1): Given[] => [
  ...declaredTask(name, DAY, taskSpec(name, { retry: { maxAttempts } })),
  ...instance(name, intended(name), started(name), failed(name)),
  ...intervalFailed(name),
];

const RETRY: HaltedCommand = { kind: "retry", reason: "the table is back" };
const SKIP: HaltedCommand = { kind: "mark", outcome: "skipped", reason: "no data that day" };
const SUCCEED: HaltedCommand = { kind: "mark", outcome: "success", reason: "loaded by hand" };

describe("decideHalted: retry an interval", () => {
  it("given a failed interval, when retried, then its stop is lifted on the task stream and nothing else", () => {
    spec("t")
      .given(failedTask())
      .when(RETRY)
      .thenMatches((d) => {
        expect(d.writes).toEqual([
          {
            streamId: taskStream(keyOf("t")),
            expectedRevision: 1n,
            events: [
              {
                type: "IntervalRetried",
                data: { key: keyOf("t"), logicalDate: DAY, by: BY, reason: "the table is back" },
              },
            ],
          },
        ]);
        expect(d).toMatchObject({ was: "failed", attempt: 2, maxAttempts: 1, reopened: [], run: null });
      });
  });

  it("then the task is ready again, and the new attempt has a fresh retry budget", () => {
    const history = failedTask("t", 2);
    const d = decideHalted(inputOf(projectionOf(history), "t"), RETRY);
    const p = projectionOf(after(history, d));
    const task = p.tasks.get(idOf("t"));
    expect(task?.failure).toBeNull();
    expect(decideTask(p, task as never, RECORDED_MS).kind).toBe("ready");
    // Attempt 2 is the first of a fresh budget of two: its failure is retried.
    const again = projectionOf([...after(history, d), ...instance("t", intended("t", { attempt: 2 }))]);
    const inst = again.instances.get(streamOf("t"));
    expect(inst?.budgetFrom).toBe(1);
    const ctx = { now: RECORDED_MS, retry: taskSpec("t", { retry: { maxAttempts: 2 } }).retry, random: 0 };
    expect(retryAfterFailure(inst as never, 2, true, "exit_code", ctx)).toBeDefined();
    expect(retryAfterFailure(inst as never, 3, true, "exit_code", ctx)).toBeUndefined();
  });

  it("given an interval that is running, when retried, then it is refused naming the abandon command", () => {
    spec("t")
      .given(declaredTask("t"), instance("t", intended("t"), started("t")))
      .when(RETRY)
      .thenThrows("state", /is running \(attempt 1\).*chronolog attempt abandon p\/a\/t\/ALL --interval /);
  });

  it("given an interval waiting to run, when retried, then it is refused: nothing has ended", () => {
    spec("t")
      .given(declaredTask("t"))
      .when(RETRY)
      .thenThrows("state", /has not ended: nothing to retry.*chronolog mark p\/a\/t\/ALL/);
  });

  it("given an interval that succeeded, when retried or marked, then it is refused as done", () => {
    const done = [
      ...declaredTask("t"),
      ...instance("t", intended("t"), started("t"), succeeded("t")),
      ...on(taskStream(keyOf("t")), {
        type: "IntervalCompleted",
        data: { key: keyOf("t"), logicalDate: DAY, nextLogicalDate: NEXT_DAY, nextRunDate: NEXT_DAY },
      }),
    ];
    // (The shell reads the interval's stream from the log: the projection no longer holds it.)
    const input = { ...inputOf(projectionOf(done), "t"), instance: instanceOf(done, streamOf("t")) };
    expect(() => decideHalted(input, RETRY)).toThrow(/already done \(succeeded\).*chronolog backfill/);
    expect(() => decideHalted(input, SKIP)).toThrow(/already done/);
  });

  it("given an interval not due yet, when marked, then it is refused", () => {
    spec("t", Date.parse(DAY) + 1000)
      .given(declaredTask("t"))
      .when(SKIP)
      .thenThrows("state", /not due yet: the interval ends at 2026-11-29T02:00:00.000Z/);
    spec("t", RECORDED_MS + 3 * 86_400_000, NEXT_DAY)
      .given(failedTask())
      .when(SKIP)
      .thenThrows("state", /has not reached .* yet: it stands at .* \(failed\)/);
  });

  it("given no such task, a retired one, or an instant that is no interval, then each is refused", () => {
    spec("nope")
      .given(failedTask())
      .when(RETRY)
      .thenThrows("not_found", /no task p\/a\/nope\/ALL/);
    spec("t")
      .given(failedTask(), on(taskStream(keyOf("t")), { type: "TaskRetired", data: { key: keyOf("t") } }))
      .when(RETRY)
      .thenThrows("state", /is retired/);
    spec("t", RECORDED_MS, "2026-11-28T03:00:00.000Z")
      .given(failedTask())
      .when(SKIP)
      .thenThrows("validation", /is not an interval of p\/a\/t\/ALL.*nearest are 2026-11-28T02:00:00.000Z/);
  });
});

describe("decideHalted: mark an interval", () => {
  it("given a failed interval, when marked skipped, then the mark is on its attempt stream with who and why", () => {
    const history = failedTask();
    const d = decideHalted(inputOf(projectionOf(history), "t"), SKIP);
    expect(d.writes).toEqual([
      {
        streamId: streamOf("t"),
        expectedRevision: 2n,
        events: [
          {
            type: "IntervalMarked",
            data: {
              key: keyOf("t"),
              logicalDate: DAY,
              outcome: "skipped",
              reason: "no data that day",
              by: BY,
            },
          },
        ],
      },
    ]);
    const p = projectionOf(after(history, d));
    const inst = p.instances.get(streamOf("t"));
    expect(inst?.status).toBe("skipped");
    expect(inst?.marked).toMatchObject({ outcome: "skipped", by: BY, reason: "no data that day" });
    expect(inst?.reason).toBe(`marked skipped by ${BY}: no data that day`);
    // The task advances past it as after a skip: its children see it done.
    const decision = decideTask(p, p.tasks.get(idOf("t")) as never, RECORDED_MS);
    expect(decision).toMatchObject({ kind: "complete", outcome: "skipped" });
    expect(explainTask(p, idOf("t"), RECORDED_MS).reasons).toEqual([
      `2026-11-28T02:00Z was skipped (marked by hand by ${BY}: no data that day); advancing the schedule`,
    ]);
  });

  it("given an interval halted by its scheduler process's end, then why says which rule halted it", () => {
    const ended = (why: string): DomainEvent => ({
      type: "AttemptFailed",
      data: {
        attempt: 1,
        token: tokenOf("t", 1),
        error: { kind: "interrupted", message: `worker w1 ${PROCESS_ENDED} and is gone${why}` },
        exitCode: null,
      },
    });
    const reasonsAfter = (why: string) => {
      const p = projectionOf([
        ...declaredTask("t"),
        ...instance("t", intended("t"), started("t"), ended(why)),
      ]);
      return explainTask(p, idOf("t"), RECORDED_MS).reasons.join("\n");
    };
    expect(reasonsAfter(", the 4th such end in a row")).toContain(
      "its scheduler process ended (killed or crashed) while it ran, the 4th time in a row; it is not run again on its own, as its run may be what ends it",
    );
    expect(reasonsAfter("")).toContain(
      "its scheduler process ended (killed or crashed) while it ran; it is not run again on its own, as the task is not idempotent",
    );
  });

  it("given an interval that never ran (blocked), when marked succeeded, then its stream starts with the mark", () => {
    const history = [
      ...declaredTask("up"),
      ...declaredTask("t", DAY, taskSpec("t", { parents: [keyOf("up")] })),
    ];
    const d = decideHalted(inputOf(projectionOf(history), "t"), SUCCEED);
    expect(d.writes[0]).toMatchObject({ streamId: streamOf("t"), expectedRevision: "no_stream" });
    const p = projectionOf(after(history, d));
    expect(decideTask(p, p.tasks.get(idOf("t")) as never, RECORDED_MS)).toMatchObject({
      kind: "complete",
      outcome: "success",
    });
  });
});

describe("decideHalted in a workflow", () => {
  /** Workflow wf: a -> b; a failed, b closed upstream_failed, the run finished failed. */
  const wfFailed = (): Given[] => {
    const a = taskSpec("a", { workflow: "wf" });
    const b = taskSpec("b", { workflow: "wf", parents: [keyOf("a")] });
    return [
      ...declaredWorkflow("wf", "skip_dependents"),
      ...declaredTask("a", DAY, a),
      ...declaredTask("b", DAY, b),
      ...runStarted("wf", ["a", "b"]),
      ...on(streamOf("a"), intended("a", { runId: runIdOf("wf") }), started("a"), failed("a")),
      ...on(streamOf("b"), {
        type: "InstanceUpstreamFailed",
        data: {
          key: keyOf("b"),
          logicalDate: DAY,
          failedParent: keyOf("a"),
          reason: `upstream ${idOf("a")} failed`,
          runId: runIdOf("wf"),
        },
      }),
      ...intervalFailed("a"),
      ...intervalFailed("b", "upstream_failed"),
      ...on(runStream(runIdOf("wf")), {
        type: "RunFinished",
        data: {
          runId: runIdOf("wf"),
          state: "failed",
          workflow: "wf",
          logicalDate: DAY,
          succeeded: [],
          failed: [idOf("a")],
          skipped: [],
          upstreamFailed: [idOf("b")],
          cancelled: [],
          marked: [],
        },
      }),
    ];
  };
  const parentsOf = (p: SchedulerProjection) => (t: string) =>
    (p.tasks.get(t)?.parents ?? []).map(formatTaskKey);

  it("given a failed task and its upstream_failed child, when the task is marked, then the run reopens and the child goes on", () => {
    const history = wfFailed();
    const d = decideHalted(inputOf(projectionOf(history), "a"), SUCCEED);
    expect(d.reopened).toEqual([idOf("b")]);
    expect(d.run).toEqual({ runId: runIdOf("wf"), reopened: true, try: 2 });
    expect(d.writes.map((w) => [w.streamId, w.events.map((e: DomainEvent) => e.type)])).toEqual([
      [runStream(runIdOf("wf")), ["RunStarted"]],
      [streamOf("a"), ["IntervalMarked"]],
      [taskStream(keyOf("b")), ["IntervalRetried"]],
    ]);
    expect(d.writes[0]?.events[0]).toMatchObject({
      data: { trigger: "rerun", try: 2, requestedBy: BY, tasks: [keyOf("a"), keyOf("b")] },
    });
    const p = projectionOf(after(history, d));
    const run = p.runs.get(runIdOf("wf"));
    expect(run).toMatchObject({ status: "running", marked: { [idOf("a")]: "success" } });
    expect(run?.outcomes).toEqual({ [idOf("a")]: "success" });
    // The child waits for its parent's completion, then runs: the run does not finish before.
    expect(decideRun(run as never, p.workflows.get("wf"), keyOf, parentsOf(p)).finish).toBeNull();
    expect(decideTask(p, p.tasks.get(idOf("b")) as never, RECORDED_MS).kind).toBe("blocked");
    // Once b succeeds, the run finishes, saying a was marked.
    const done = projectionOf([
      ...after(history, d),
      ...on(taskStream(keyOf("a")), {
        type: "IntervalCompleted",
        data: { key: keyOf("a"), logicalDate: DAY, nextLogicalDate: NEXT_DAY, nextRunDate: NEXT_DAY },
      }),
      ...on(streamOf("b"), intended("b", { runId: runIdOf("wf") }), started("b"), succeeded("b")),
    ]);
    const finish = decideRun(
      done.runs.get(runIdOf("wf")) as never,
      done.workflows.get("wf"),
      keyOf,
      parentsOf(done),
    ).finish;
    expect(finish?.data).toMatchObject({
      state: "success",
      succeeded: [idOf("a"), idOf("b")],
      marked: [idOf("a")],
    });
  });

  it("given a child closed for its failed parent, when the child alone is retried, then it is refused naming the parent", () => {
    spec("b")
      .given(wfFailed())
      .when(RETRY)
      .thenThrows(
        "state",
        /waits for its parent p\/a\/a\/ALL, halted at .* \(failed\): retry the parent first.*chronolog retry p\/a\/a\/ALL --interval/,
      );
  });

  it("then why names the parent's ways out for the child, and the child's own marks", () => {
    const p = projectionOf(wfFailed());
    const b = explainTask(p, idOf("b"), RECORDED_MS);
    expect(b.condition).toBe("upstream_failed");
    expect(b.nextSteps.map((s) => [s.action, s.task])).toEqual([
      ["retry", idOf("a")],
      ["mark_succeeded", idOf("a")],
      ["mark_skipped", idOf("a")],
      ["mark_succeeded", idOf("b")],
      ["mark_skipped", idOf("b")],
    ]);
    // Each of them works there.
    for (const s of b.nextSteps) {
      const command: HaltedCommand =
        s.action === "retry"
          ? RETRY
          : { kind: "mark", outcome: s.action === "mark_succeeded" ? "success" : "skipped", reason: "x" };
      const name = s.task === idOf("a") ? "a" : "b";
      expect(() => decideHalted(inputOf(p, name), command)).not.toThrow();
    }
  });

  it("given a run still going, when a task is retried, then no run is written and the run waits for it", () => {
    const history = wfFailed().filter((g) => g.type !== "RunFinished");
    const d = decideHalted(inputOf(projectionOf(history), "a"), RETRY);
    expect(d.run).toEqual({ runId: runIdOf("wf"), reopened: false, try: 1 });
    expect(d.writes.map((w) => w.streamId)).toEqual([taskStream(keyOf("a")), taskStream(keyOf("b"))]);
    const p = projectionOf(after(history, d));
    expect(p.runs.get(runIdOf("wf"))?.outcomes).toEqual({});
  });
});

describe("nextStepsFor: the way out where a task stands", () => {
  it("a failed interval: retry, mark succeeded, mark skipped; a paused task: resume; a lost lease: abandon", () => {
    const p = projectionOf(failedTask());
    const steps = nextStepsFor(decideTask(p, p.tasks.get(idOf("t")) as never, RECORDED_MS), idOf("t"), DAY);
    expect(steps.map((s) => s.command)).toEqual([
      `chronolog retry ${idOf("t")} --interval ${DAY}`,
      `chronolog mark ${idOf("t")} --interval ${DAY} --succeeded --reason "say why"`,
      `chronolog mark ${idOf("t")} --interval ${DAY} --skipped --reason "say why"`,
    ]);
    expect(nextStepsFor({ kind: "paused", reason: null }, idOf("t"), DAY)).toEqual([
      { action: "resume", task: idOf("t"), interval: null, command: `chronolog resume ${idOf("t")}` },
    ]);
    const lost = projectionOf([
      ...declaredTask("t"),
      ...instance("t", intended("t"), started("t"), {
        type: "AttemptHeartbeatExpired",
        data: { attempt: 1, token: "tok-t-1", leaseExpiredAt: DAY, workerId: "w-1" },
      }),
    ]);
    expect(
      nextStepsFor(decideTask(lost, lost.tasks.get(idOf("t")) as never, RECORDED_MS), idOf("t"), DAY),
    ).toEqual([
      {
        action: "abandon",
        task: idOf("t"),
        interval: DAY,
        command: `chronolog attempt abandon ${idOf("t")} --interval ${DAY} --retry`,
      },
    ]);
  });

  it("a child blocked by a failed parent names the parent's ways out", () => {
    const history = [
      ...failedTask("up"),
      ...declaredTask("t", DAY, taskSpec("t", { parents: [keyOf("up")] })),
    ];
    const p = projectionOf(history);
    const steps = nextStepsFor(decideTask(p, p.tasks.get(idOf("t")) as never, RECORDED_MS), idOf("t"), DAY);
    expect(steps.map((s) => [s.action, s.task])).toEqual([
      ["retry", idOf("up")],
      ["mark_succeeded", idOf("up")],
      ["mark_skipped", idOf("up")],
    ]);
  });

  it("a child blocked by a paused parent names the parent's resume", () => {
    const p = projectionOf([
      ...declaredTask("up"),
      ...on(taskStream(keyOf("up")), { type: "TaskPaused", data: { key: keyOf("up") } }),
      ...declaredTask("t", DAY, taskSpec("t", { parents: [keyOf("up")] })),
    ]);
    const steps = nextStepsFor(
      decideTask(p, p.tasks.get(idOf("t")) as never, RECORDED_MS),
      idOf("t"),
      DAY,
      p.tasks,
    );
    expect(steps).toEqual([
      { action: "resume", task: idOf("up"), interval: null, command: `chronolog resume ${idOf("up")}` },
    ]);
  });
});

describe("an old log", () => {
  it("folds without the new events and fields: no mark, budget from the first attempt", () => {
    const p = projectionOf(failedTask());
    const inst = p.instances.get(instanceStream(keyOf("t"), DAY));
    expect(inst?.budgetFrom).toBe(0);
    expect(inst?.marked).toBeNull();
    expect(recorded(failedTask()).length).toBeGreaterThan(0);
  });
});
