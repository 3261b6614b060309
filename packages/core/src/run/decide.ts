import type { DomainEvent, DomainEventOf } from "../events/catalog.js";
import { type InstanceStatus, TERMINAL_INSTANCE_STATUSES } from "../instance/state.js";
import type { TaskKey } from "../keys.js";
import type { WorkflowSpec } from "../spec.js";
import type { RunState } from "./state.js";

const SUCCESS: ReadonlySet<InstanceStatus> = new Set(["success"]);
const BAD: ReadonlySet<InstanceStatus> = new Set(["failed", "abandoned"]);
const TERMINAL = TERMINAL_INSTANCE_STATUSES;

/** Every task downstream of `from` within the run's tasks (by declared parent edges). */
export function descendantsWithin(
  from: Iterable<string>,
  tasks: readonly string[],
  parentsOf: (task: string) => readonly string[],
): Set<string> {
  const inRun = new Set(tasks);
  const children = new Map<string, string[]>();
  for (const t of tasks) {
    for (const p of parentsOf(t)) {
      if (!inRun.has(p)) continue;
      let list = children.get(p);
      if (!list) {
        list = [];
        children.set(p, list);
      }
      list.push(t);
    }
  }
  const out = new Set<string>();
  const queue = [...from];
  while (queue.length > 0) {
    const t = queue.shift() as string;
    for (const c of children.get(t) ?? []) {
      if (!out.has(c)) {
        out.add(c);
        queue.push(c);
      }
    }
  }
  return out;
}

export interface RunDecision {
  /** Instances to close without running: task id -> event for its attempt stream. */
  readonly close: ReadonlyArray<{ task: string; event: DomainEvent }>;
  /** Running or queued attempts of the run to cancel (fail fast): task ids. */
  readonly cancel: readonly string[];
  /** The run's end, once every task is terminal. */
  readonly finish: DomainEventOf<"RunFinished"> | null;
}

/**
 * A run's failure policy and its end. `skip_dependents`: the descendants of a failed
 * task become upstream_failed and everything else completes. `fail_fast`: the first failure
 * cancels the run's running attempts and nothing new starts. The run ends when every task is
 * terminal, with the sets of each outcome; a run that skipped anything is `partial`, never a
 * clean success.
 */
export function decideRun(
  run: RunState,
  workflow: WorkflowSpec | undefined,
  keyOf: (task: string) => TaskKey,
  parentsOf: (task: string) => readonly string[],
): RunDecision {
  if (run.status !== "running") return { close: [], cancel: [], finish: null };
  const outcome = (t: string) => run.outcomes[t];
  const failed = run.tasks.filter((t) => BAD.has(outcome(t) as InstanceStatus));
  const close: Array<{ task: string; event: DomainEvent }> = [];
  const cancel: string[] = [];
  if (failed.length > 0) {
    const below = descendantsWithin(failed, run.tasks, parentsOf);
    const failFast = workflow?.failurePolicy === "fail_fast";
    for (const t of run.tasks) {
      const o = outcome(t);
      if (o !== undefined && TERMINAL.has(o)) continue;
      if (o === "queued" || o === "running" || o === "retry_wait") {
        if (failFast) cancel.push(t);
        continue;
      }
      const key = keyOf(t);
      if (below.has(t)) {
        const parent = failed.find((f) => descendantsWithin([f], run.tasks, parentsOf).has(t)) as string;
        close.push({
          task: t,
          event: {
            type: "InstanceUpstreamFailed",
            data: {
              key,
              logicalDate: run.logicalDate,
              failedParent: keyOf(parent),
              reason: `upstream ${parent} ${outcome(parent)}`,
              runId: run.runId,
            },
          },
        });
      } else if (failFast) {
        close.push({
          task: t,
          event: {
            type: "InstanceCancelled",
            data: {
              key,
              logicalDate: run.logicalDate,
              reason: `run failed fast: ${failed.join(", ")} failed`,
              runId: run.runId,
            },
          },
        });
      }
    }
  }
  const done = run.tasks.every((t) => TERMINAL.has(outcome(t) as InstanceStatus));
  let finish: DomainEventOf<"RunFinished"> | null = null;
  if (done && close.length === 0) {
    const by = (pred: (s: InstanceStatus) => boolean) =>
      run.tasks.filter((t) => pred(outcome(t) as InstanceStatus));
    const succeeded = by((s) => SUCCESS.has(s));
    const bad = by((s) => BAD.has(s));
    const skipped = by((s) => s === "skipped");
    const upstreamFailed = by((s) => s === "upstream_failed");
    const cancelled = by((s) => s === "cancelled");
    const marked = run.tasks.filter((t) => run.marked?.[t] !== undefined);
    finish = {
      type: "RunFinished",
      data: {
        runId: run.runId,
        workflow: run.workflow,
        logicalDate: run.logicalDate,
        state:
          bad.length > 0 || cancelled.length > 0
            ? "failed"
            : succeeded.length === run.tasks.length
              ? "success"
              : "partial",
        succeeded,
        failed: bad,
        skipped,
        upstreamFailed,
        cancelled,
        // (Only when some were: a run no one marked records what it always did.)
        ...(marked.length > 0 ? { marked } : {}),
      },
    };
  }
  return { close, cancel, finish };
}
