import { projectedSlots, type SchedulerProjection, type TaskState } from "@chronolog/core";
import { renderProblem, type TaskRow, taskRow } from "@chronolog/scheduler";
import { HttpProblem } from "./problem.js";

export interface TaskQuery {
  readonly limit: number;
  readonly cursor?: string;
  readonly project?: string;
  /** Only tasks of these projects (a token that may read only them). */
  readonly readable?: ReadonlySet<string>;
  readonly status?: TaskState["status"];
  readonly condition?: string;
}

/**
 * Tasks in key order for paging. The sorted ids are kept until a task is declared (tasks are
 * never removed: a retired task stays, retired), so a page costs its own rows, not a sort.
 */
export class TaskIndex {
  private sorted: string[] = [];
  private sortedSize = -1;

  constructor(private readonly projection: SchedulerProjection) {}

  private ids(): string[] {
    if (this.sortedSize !== this.projection.tasks.size) {
      this.sorted = [...this.projection.tasks.keys()].sort();
      this.sortedSize = this.sorted.length;
    }
    return this.sorted;
  }

  page(now: number, q: TaskQuery): { items: TaskRow[]; next: string | null } {
    const ids = this.ids();
    let start = 0;
    if (q.cursor !== undefined) {
      let after: string;
      try {
        after = Buffer.from(q.cursor, "base64url").toString("utf8");
      } catch {
        after = "";
      }
      if (!after) throw new HttpProblem(400, "validation", `cursor "${q.cursor}" is not one this API gave`);
      // The first id after the cursor's (binary search: ids are sorted).
      let lo = 0;
      let hi = ids.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((ids[mid] as string) <= after) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    const options = {
      slots: projectedSlots(this.projection),
      renderProblem: renderProblem(this.projection),
    };
    const items: TaskRow[] = [];
    let last: string | null = null;
    let i = start;
    for (; i < ids.length && items.length < q.limit; i++) {
      const id = ids[i] as string;
      const task = this.projection.tasks.get(id) as TaskState;
      last = id;
      if (q.project !== undefined && task.key.project !== q.project) continue;
      if (q.readable !== undefined && !q.readable.has(task.key.project)) continue;
      if (q.status !== undefined && task.status !== q.status) continue;
      const row = taskRow(this.projection, task, now, options);
      if (q.condition !== undefined && row.condition !== q.condition) continue;
      items.push(row);
    }
    const more = i < ids.length && last !== null;
    return { items, next: more ? Buffer.from(last as string, "utf8").toString("base64url") : null };
  }
}
