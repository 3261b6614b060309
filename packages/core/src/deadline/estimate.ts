import { expectedParentSlot } from "../gate.js";
import { formatTaskKey } from "../keys.js";
import { nextCronTime } from "../schedule/cron.js";
import { parseInstant } from "../schedule/interval.js";
import { instanceStream } from "../streams.js";
import type { TaskView } from "../task/decide-task.js";
import type { TaskState } from "../task/state.js";
import { medianDuration } from "./durations.js";

/** When an interval would be done, if every task still to run on its way takes its median. */
export interface Estimate {
  /** The instant it would be done, in ms; null: it cannot be, without an operator (see `blocked`). */
  readonly doneAt: number | null;
  /** The longest remaining path, from the first task still to run to the interval's own. */
  readonly path: ReadonlyArray<{ readonly task: string; readonly logicalDate: string; readonly ms: number }>;
  /** Tasks on the way with no recorded duration (counted as taking no time). */
  readonly unknown: readonly string[];
  /** A task on the way that stands failed, paused, retired or missing. */
  readonly blocked: string | null;
}

/** The durations the estimate reads: a task's recent successful attempts' durations in ms. */
export type Durations = ReadonlyMap<string, readonly number[]>;

/** Intervals of one task counted at most on a path (a task far behind is simply late). */
const MAX_OWN_INTERVALS = 500;
const MAX_DEPTH = 64;

interface Node {
  readonly at: number;
  readonly path: Estimate["path"];
  readonly blocked: string | null;
}

/**
 * The estimate for `taskId`'s interval `logicalDate` at `now`: the longest remaining path
 * through the ancestors that have not finished the slots it needs, each task taking the median
 * of its recent durations for each of its intervals still to run (a running attempt the rest of
 * its median), none starting before its interval ends. Pure; each task and slot is costed once.
 */
export function estimateDone(
  view: Pick<TaskView, "tasks" | "instances">,
  durations: Durations,
  taskId: string,
  logicalDate: string,
  now: number,
): Estimate {
  const memo = new Map<string, Node>();
  const unknown = new Set<string>();

  function visit(id: string, at: string, depth: number): Node {
    const key = `${id}@${at}`;
    const known = memo.get(key);
    if (known) return known;
    const task = view.tasks.get(id);
    let node: Node;
    if (!task) node = { at: now, path: [], blocked: id };
    else if (task.logicalDate > at) node = { at: now, path: [], blocked: null };
    else if (task.status !== "active" || (task.failure && task.failure.logicalDate <= at))
      node = { at: now, path: [], blocked: id };
    else node = cost(task, at, depth);
    memo.set(key, node);
    return node;
  }

  function cost(task: TaskState, at: string, depth: number): Node {
    const median = medianDuration(durations.get(task.id));
    if (median === null) unknown.add(task.id);
    const each = median ?? 0;
    // Its own intervals from the current one up to `at`, each after its parents' slots and its end.
    let ready = now;
    let path: Estimate["path"] = [];
    let blocked: string | null = null;
    let slot = parseInstant(task.logicalDate, "logicalDate");
    const target = Date.parse(at);
    for (let i = 0; i < MAX_OWN_INTERVALS && slot.getTime() <= target; i += 1) {
      const ld = slot.toISOString();
      const end = nextCronTime(task.spec.cron, task.spec.timezone, slot);
      let start = Math.max(ready, end.getTime());
      let via: Estimate["path"] = path;
      if (depth < MAX_DEPTH)
        for (const p of task.parents) {
          const parent = view.tasks.get(formatTaskKey(p));
          if (!parent) {
            blocked ??= formatTaskKey(p);
            continue;
          }
          const need = expectedParentSlot(
            { logicalDate: ld, cron: task.spec.cron, timezone: task.spec.timezone },
            parent.spec,
          );
          const n = visit(parent.id, need, depth + 1);
          blocked ??= n.blocked;
          if (n.at > start || (n.at === start && n.path.length > via.length)) {
            start = Math.max(start, n.at);
            via = n.path;
          }
        }
      const running = i === 0 ? runningFor(view, task, now) : null;
      const left = running === null ? each : Math.max(0, each - running);
      ready = (running === null ? start : now) + left;
      path = [
        ...via.filter((s) => s.task !== task.id || s.logicalDate !== ld),
        { task: task.id, logicalDate: ld, ms: left },
      ];
      slot = end;
    }
    return { at: ready, path, blocked };
  }

  const top = visit(taskId, logicalDate, 0);
  return {
    doneAt: top.blocked ? null : top.at,
    path: top.path,
    unknown: [...unknown],
    blocked: top.blocked,
  };
}

/** How long the current interval's attempt has run, if one is running now. */
function runningFor(view: Pick<TaskView, "instances">, task: TaskState, now: number): number | null {
  const inst = view.instances.get(instanceStream(task.key, task.logicalDate));
  const a = inst?.attempts.at(-1);
  if (!inst || !a || (inst.status !== "running" && inst.status !== "queued") || a.endedAt) return null;
  const since = a.startedAt ?? a.intendedAt;
  return since ? Math.max(0, now - Date.parse(since)) : 0;
}
