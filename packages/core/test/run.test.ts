import {
  decideRun,
  descendantsWithin,
  evolveRun,
  type RunState,
  type WorkflowSpec,
  withOutcome,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";

// The ten-job graph (three fetches, three parses, a join, an index, a report and a notify):
// job -> parents.
const GRAPH: Record<string, string[]> = {
  fetch_a: [],
  fetch_b: [],
  fetch_c: [],
  parse_a: ["fetch_a"],
  parse_b: ["fetch_b"],
  parse_c: ["fetch_c"],
  join_ab: ["parse_a", "parse_b"],
  index_c: ["parse_c"],
  report: ["join_ab", "index_c"],
  notify: ["parse_c"],
};
const TASKS = Object.keys(GRAPH);
const parentsOf = (t: string) => GRAPH[t] ?? [];
const keyOf = (t: string) => ({ project: "p", account: "a", name: t, partition: "ALL" });
const workflow = (failurePolicy: "skip_dependents" | "fail_fast"): WorkflowSpec => ({
  name: "graph",
  project: "p",
  account: "a",
  maxActiveRuns: 1,
  maxActiveTasks: 16,
  failurePolicy,
  config: {},
});

function started(): RunState {
  const run = evolveRun(
    undefined,
    {
      type: "RunStarted",
      data: {
        runId: "graph@d",
        workflow: "graph",
        logicalDate: "2026-11-28T02:00:00.000Z",
        tasks: TASKS.map(keyOf),
        trigger: "schedule",
        params: {},
      },
    },
    { revision: 0n, recordedAt: "2026-11-29T00:00:00.000Z" },
  ) as RunState;
  return { ...run, tasks: TASKS };
}

function given(outcomes: Record<string, string>): RunState {
  let run = started();
  for (const [t, s] of Object.entries(outcomes)) run = withOutcome(run, t, s as never);
  return run;
}

describe("runs of the ten-job graph", () => {
  it("finds descendants within the run", () => {
    expect([...descendantsWithin(["parse_b"], TASKS, parentsOf)].sort()).toEqual(["join_ab", "report"]);
    expect([...descendantsWithin(["parse_c"], TASKS, parentsOf)].sort()).toEqual([
      "index_c",
      "notify",
      "report",
    ]);
  });

  it("skip_dependents: when parse_b fails, exactly join_ab and report become upstream_failed", () => {
    const run = given({
      fetch_a: "success",
      fetch_b: "success",
      fetch_c: "success",
      parse_a: "success",
      parse_b: "failed",
      parse_c: "success",
      index_c: "running",
      notify: "running",
    });
    const d = decideRun(run, workflow("skip_dependents"), keyOf, parentsOf);
    expect(d.close.map((c) => [c.task, c.event.type])).toEqual([
      ["join_ab", "InstanceUpstreamFailed"],
      ["report", "InstanceUpstreamFailed"],
    ]);
    expect(d.cancel).toEqual([]);
    expect(d.finish).toBeNull();
  });

  it("fail_fast: running attempts are cancelled and the rest never starts", () => {
    const run = given({
      fetch_a: "success",
      fetch_b: "success",
      fetch_c: "success",
      parse_b: "failed",
      parse_c: "success",
      index_c: "running",
      notify: "running",
      parse_a: "running",
    });
    const d = decideRun(run, workflow("fail_fast"), keyOf, parentsOf);
    expect(d.cancel.sort()).toEqual(["index_c", "notify", "parse_a"]);
    expect(d.close.map((c) => [c.task, c.event.type]).sort()).toEqual([
      ["join_ab", "InstanceUpstreamFailed"],
      ["report", "InstanceUpstreamFailed"],
    ]);
  });

  it("finishes with every set reported; a run with a failure is never a clean success", () => {
    const run = given({
      fetch_a: "success",
      fetch_b: "success",
      fetch_c: "success",
      parse_a: "success",
      parse_b: "failed",
      parse_c: "success",
      join_ab: "upstream_failed",
      index_c: "success",
      report: "upstream_failed",
      notify: "success",
    });
    const d = decideRun(run, workflow("skip_dependents"), keyOf, parentsOf);
    expect(d.finish?.data).toMatchObject({
      state: "failed",
      failed: ["parse_b"],
      upstreamFailed: ["join_ab", "report"],
      succeeded: ["fetch_a", "fetch_b", "fetch_c", "parse_a", "parse_c", "index_c", "notify"],
    });
  });

  it("a run that skipped something is partial, not success", () => {
    const all = Object.fromEntries(TASKS.map((t) => [t, "success"]));
    const d = decideRun(given({ ...all, notify: "skipped" }), workflow("skip_dependents"), keyOf, parentsOf);
    expect(d.finish?.data.state).toBe("partial");
    const clean = decideRun(given(all), workflow("skip_dependents"), keyOf, parentsOf);
    expect(clean.finish?.data.state).toBe("success");
  });

  it("a rerun clears the outcomes of the tasks it names and keeps the others", () => {
    const id = (t: string) => `p/a/${t}/ALL`;
    const finished = given({
      [id("parse_b")]: "failed",
      [id("join_ab")]: "upstream_failed",
      [id("fetch_a")]: "success",
    });
    const rerun = evolveRun(
      finished,
      {
        type: "RunStarted",
        data: {
          runId: "graph@d",
          workflow: "graph",
          logicalDate: "2026-11-28T02:00:00.000Z",
          tasks: ["parse_b", "join_ab"].map(keyOf),
          trigger: "rerun",
          params: {},
        },
      },
      { revision: 3n, recordedAt: "2026-11-29T01:00:00.000Z" },
    ) as RunState;
    expect(rerun.status).toBe("running");
    expect(rerun.outcomes).toEqual({ [id("fetch_a")]: "success" });
  });
});
