import { decideRun, formatTaskKey, type RunDecision, type SchedulerProjection } from "@chronolog/core";
import { describe, it } from "vitest";
import {
  DAY,
  declaredTask,
  declaredWorkflow,
  failed,
  idOf,
  instance,
  intended,
  keyOf,
  runIdOf,
  runStarted,
  started,
  streamOf,
  succeeded,
  taskSpec,
} from "./support/events.js";
import { type Given, on, projectionOf, specification } from "./support/specification.js";

/**
 * A small workflow: extract feeds transform_a and transform_b, which both feed load; audit
 * stands alone.
 */
const GRAPH: Record<string, string[]> = {
  extract: [],
  transform_a: ["extract"],
  transform_b: ["extract"],
  load: ["transform_a", "transform_b"],
  audit: [],
};
const TASKS = Object.keys(GRAPH);
const RUN = runIdOf("w");
const inRun = { runId: RUN };

function declaredGraph(policy: "skip_dependents" | "fail_fast"): Given[] {
  return [
    ...declaredWorkflow("w", policy),
    ...TASKS.flatMap((t) =>
      declaredTask(t, DAY, taskSpec(t, { workflow: "w", parents: (GRAPH[t] ?? []).map(keyOf) })),
    ),
    ...runStarted("w", TASKS),
  ];
}

const ok = (t: string) => instance(t, intended(t, inRun), succeeded(t));
const bad = (t: string) => instance(t, intended(t, inRun), failed(t));
const running = (t: string) => instance(t, intended(t, inRun), started(t));
const upstreamFailed = (t: string, parent: string) =>
  on(streamOf(t), {
    type: "InstanceUpstreamFailed",
    data: {
      key: keyOf(t),
      logicalDate: DAY,
      failedParent: keyOf(parent),
      reason: "upstream failed",
      runId: RUN,
    },
  });
const skipped = (t: string) =>
  on(streamOf(t), {
    type: "InstanceSkipped",
    data: { key: keyOf(t), logicalDate: DAY, reason: "skipped", runId: RUN },
  });

/** decideRun on the run, its workflow and its tasks' parents, all read from the projection. */
const spec = specification({
  fold: (history: readonly Given[]): SchedulerProjection => projectionOf(history),
  decide: (p, _: "the run is looked at"): RunDecision => {
    const run = p.runs.get(RUN);
    if (!run) throw new Error("the history holds no run");
    const task = (id: string) => {
      const t = p.tasks.get(id);
      if (!t) throw new Error(`task ${id} is not declared`);
      return t;
    };
    return decideRun(
      run,
      p.workflows.get(run.workflow),
      (id) => task(id).key,
      (id) => task(id).parents.map(formatTaskKey),
    );
  },
});
const LOOK = "the run is looked at" as const;

describe("decideRun: skip_dependents", () => {
  it("a failed task's descendants become upstream_failed; the rest goes on", () => {
    spec
      .given(declaredGraph("skip_dependents"), ok("extract"), bad("transform_a"), running("transform_b"))
      .when(LOOK)
      .then({
        close: [
          {
            task: idOf("load"),
            event: {
              type: "InstanceUpstreamFailed",
              data: {
                key: keyOf("load"),
                logicalDate: DAY,
                failedParent: keyOf("transform_a"),
                reason: `upstream ${idOf("transform_a")} failed`,
                runId: RUN,
              },
            },
          },
        ],
        cancel: [],
        finish: null,
      });
  });

  it("nothing to close and nothing to finish while no task failed and some still run", () => {
    spec
      .given(declaredGraph("skip_dependents"), ok("extract"), running("transform_a"))
      .when(LOOK)
      .then({ close: [], cancel: [], finish: null });
  });
});

describe("decideRun: fail_fast", () => {
  it("the first failure cancels what runs and closes what has not started", () => {
    spec
      .given(declaredGraph("fail_fast"), ok("extract"), bad("transform_a"), running("transform_b"))
      .when(LOOK)
      .then({
        close: [
          {
            task: idOf("load"),
            event: {
              type: "InstanceUpstreamFailed",
              data: {
                key: keyOf("load"),
                logicalDate: DAY,
                failedParent: keyOf("transform_a"),
                reason: `upstream ${idOf("transform_a")} failed`,
                runId: RUN,
              },
            },
          },
          {
            task: idOf("audit"),
            event: {
              type: "InstanceCancelled",
              data: {
                key: keyOf("audit"),
                logicalDate: DAY,
                reason: `run failed fast: ${idOf("transform_a")} failed`,
                runId: RUN,
              },
            },
          },
        ],
        cancel: [idOf("transform_b")],
        finish: null,
      });
  });
});

describe("decideRun: finishing", () => {
  const finished = (
    state: "success" | "failed" | "partial",
    sets: Partial<Record<"succeeded" | "failed" | "skipped" | "upstreamFailed" | "cancelled", string[]>>,
  ): RunDecision => ({
    close: [],
    cancel: [],
    finish: {
      type: "RunFinished",
      data: {
        runId: RUN,
        workflow: "w",
        logicalDate: DAY,
        state,
        succeeded: (sets.succeeded ?? []).map(idOf),
        failed: (sets.failed ?? []).map(idOf),
        skipped: (sets.skipped ?? []).map(idOf),
        upstreamFailed: (sets.upstreamFailed ?? []).map(idOf),
        cancelled: (sets.cancelled ?? []).map(idOf),
      },
    },
  });

  it("a run whose every task succeeded finishes as a success", () => {
    spec
      .given(declaredGraph("skip_dependents"), ...TASKS.map(ok))
      .when(LOOK)
      .then(finished("success", { succeeded: TASKS }));
  });

  it("a run with a failure finishes failed, with every outcome's set", () => {
    spec
      .given(
        declaredGraph("skip_dependents"),
        ok("extract"),
        bad("transform_a"),
        ok("transform_b"),
        upstreamFailed("load", "transform_a"),
        ok("audit"),
      )
      .when(LOOK)
      .then(
        finished("failed", {
          succeeded: ["extract", "transform_b", "audit"],
          failed: ["transform_a"],
          upstreamFailed: ["load"],
        }),
      );
  });

  it("a run that skipped a task is partial, never a clean success", () => {
    spec
      .given(
        declaredGraph("skip_dependents"),
        ...TASKS.filter((t) => t !== "audit").map(ok),
        skipped("audit"),
      )
      .when(LOOK)
      .then(
        finished("partial", {
          succeeded: ["extract", "transform_a", "transform_b", "load"],
          skipped: ["audit"],
        }),
      );
  });

  it("a run already finished is left as it is", () => {
    spec
      .given(
        declaredGraph("skip_dependents"),
        ...TASKS.map(ok),
        on(`run-${RUN}`, {
          type: "RunFinished",
          data: {
            runId: RUN,
            workflow: "w",
            logicalDate: DAY,
            state: "success",
            succeeded: TASKS.map(idOf),
            failed: [],
            skipped: [],
            upstreamFailed: [],
            cancelled: [],
          },
        }),
      )
      .when(LOOK)
      .then({ close: [], cancel: [], finish: null });
  });
});
