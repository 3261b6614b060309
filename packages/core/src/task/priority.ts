import { formatTaskKey } from "../keys.js";
import type { PriorityRule } from "../spec.js";
import type { TaskState } from "./state.js";

/** The tasks that name each task as a parent (the projection's index of children). */
export interface ChildrenOf {
  of(id: string): Iterable<string>;
}

/**
 * Where a task's current interval stands among the attempts that wait for the same slots (a
 * connection's, a run's): a free slot goes to the highest claim first, then to the oldest
 * interval (the one due longest), then by the task's id.
 */
export interface Claim {
  /**
   * An interval of a backfill that gave no priority of its own: it comes after every interval
   * that is not (so a backfill never delays the schedule), and among backfills by weight.
   */
  readonly backfill: boolean;
  /** The task's weight (see `PriorityWeights`), or the priority its backfill gave. */
  readonly weight: number;
}

/**
 * The weight of each task: its own `priority` (0 when it declares none), or with
 * `priorityRule: downstream` its own plus that of every task below it, each counted once
 * (retired ones not). A downstream weight is counted when first asked and kept until a task
 * declaration changes (`changed`), so that deciding a pass never walks the graph.
 */
export class PriorityWeights {
  /** task id -> its downstream weight, counted since the last declaration change. */
  private readonly downstream = new Map<string, number>();

  constructor(
    private readonly tasks: ReadonlyMap<string, TaskState>,
    private readonly children: ChildrenOf,
  ) {}

  /** A task was declared, changed, retired or revived: downstream weights are counted again. */
  changed(): void {
    if (this.downstream.size > 0) this.downstream.clear();
  }

  weightOf(task: TaskState): number {
    const own = task.spec.priority ?? 0;
    if (task.spec.priorityRule !== "downstream") return own;
    let weight = this.downstream.get(task.id);
    if (weight === undefined) {
      weight = own + this.below(task.id);
      this.downstream.set(task.id, weight);
    }
    return weight;
  }

  /** The sum of the priorities of every task below `id`, each counted once. */
  private below(id: string): number {
    const seen = new Set([id]);
    const queue = [id];
    let sum = 0;
    for (let i = 0; i < queue.length; i++) {
      for (const child of this.children.of(queue[i] as string)) {
        if (seen.has(child)) continue;
        seen.add(child);
        queue.push(child);
        const t = this.tasks.get(child);
        if (t && t.status !== "retired") sum += t.spec.priority ?? 0;
      }
    }
    return sum;
  }
}

/** The children of every task, read from the tasks' parents (for a view without an index). */
export function childrenFromTasks(tasks: ReadonlyMap<string, TaskState>): ChildrenOf {
  let index: Map<string, string[]> | null = null;
  return {
    of(id) {
      if (!index) {
        index = new Map();
        for (const t of tasks.values())
          for (const p of t.parents) {
            const parent = formatTaskKey(p);
            const list = index.get(parent);
            if (list) list.push(t.id);
            else index.set(parent, [t.id]);
          }
      }
      return index.get(id) ?? [];
    },
  };
}

/** The claim of the task's current interval. */
export function claimOf(task: TaskState, weights: Pick<PriorityWeights, "weightOf">): Claim {
  const b = task.backfill;
  if (b?.backfillId !== undefined) {
    if (b.priority !== undefined) return { backfill: false, weight: b.priority };
    return { backfill: true, weight: weights.weightOf(task) };
  }
  return { backfill: false, weight: weights.weightOf(task) };
}

/** Negative when `a` goes before `b`, positive after, 0 when the claims are alike. */
export function compareClaims(a: Claim, b: Claim): number {
  if (a.backfill !== b.backfill) return a.backfill ? 1 : -1;
  return b.weight - a.weight;
}

/**
 * The order free slots are given out in: the higher claim, then the older interval, then
 * `since` (when the scheduler knows how long each has waited for a run's slot), then the id.
 */
export function compareWaiters(
  a: { readonly claim: Claim; readonly logicalDate: string; readonly since: number; readonly id: string },
  b: { readonly claim: Claim; readonly logicalDate: string; readonly since: number; readonly id: string },
): number {
  return (
    compareClaims(a.claim, b.claim) ||
    cmp(a.logicalDate, b.logicalDate) ||
    a.since - b.since ||
    cmp(a.id, b.id)
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A task's priority as `task`, the API and the web page show it. */
export interface ShownPriority {
  /** Its declared priority (0: none declared). */
  readonly priority: number;
  readonly rule: PriorityRule;
  /** Its weight: the priority, or with `downstream` its subtree's sum. */
  readonly weight: number;
  /** Where its current interval stands (a backfill's: after the schedule, or at its own priority). */
  readonly claim: Claim;
}

export function shownPriority(task: TaskState, weights: Pick<PriorityWeights, "weightOf">): ShownPriority {
  return {
    priority: task.spec.priority ?? 0,
    rule: task.spec.priorityRule ?? "absolute",
    weight: weights.weightOf(task),
    claim: claimOf(task, weights),
  };
}

/** `5`, `5 (downstream: weight 12)`, then how its current interval competes if it is a backfill's. */
export function describePriority(p: ShownPriority, backfill: boolean): string {
  const own = p.rule === "downstream" ? `${p.priority} (downstream: weight ${p.weight})` : `${p.priority}`;
  if (!backfill) return own;
  return p.claim.backfill
    ? `${own}; its backfill's intervals wait after every scheduled one`
    : `${own}; its backfill's intervals compete at priority ${p.claim.weight}`;
}
