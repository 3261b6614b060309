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
 * Tasks in key order for paging. The sorted ids are kept, and the tasks declared since are
 * merged in when a page is asked for (tasks are never removed: a retired task stays, retired),
 * so a page costs its own rows, not a sort: the whole catalogue is sorted once, then only the
 * tasks each declaration adds (a million ids sorted again took half a second of the scheduler's
 * thread at the first page after every declaration).
 */
export class TaskIndex {
  private sorted: string[] = [];
  /** How many of the tasks, in the order they were added, `sorted` holds. */
  private sortedSize = 0;

  constructor(private readonly projection: SchedulerProjection) {}

  private ids(): string[] {
    const { tasks } = this.projection;
    if (this.sortedSize === tasks.size) return this.sorted;
    if (this.sortedSize === 0 || tasks.size < this.sortedSize) {
      this.sorted = [...tasks.keys()].sort();
    } else {
      // The tasks added since: those past the ones already sorted, in the map's order.
      const added: string[] = [];
      const sorted = this.sortedSize;
      let k = 0;
      tasks.forEach((_, id) => {
        if (k++ >= sorted) added.push(id);
      });
      this.sorted = mergeSorted(this.sorted, added.sort());
    }
    this.sortedSize = tasks.size;
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

/** Past this many ids added at once, they are merged in one pass, not placed one at a time. */
const PLACED = 1024;

/** Two lists of ids, each in order, as one in order. */
function mergeSorted(a: readonly string[], b: readonly string[]): string[] {
  if (b.length <= PLACED) {
    // Each added id's place found by binary search; the runs between copied whole.
    const pieces: string[][] = [];
    let from = 0;
    for (const id of b) {
      let lo = from;
      let hi = a.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((a[mid] as string) < id) lo = mid + 1;
        else hi = mid;
      }
      pieces.push(a.slice(from, lo), [id]);
      from = lo;
    }
    pieces.push(a.slice(from));
    return ([] as string[]).concat(...pieces);
  }
  const out: string[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length)
    out[k++] = (a[i] as string) <= (b[j] as string) ? (a[i++] as string) : (b[j++] as string);
  while (i < a.length) out[k++] = a[i++] as string;
  while (j < b.length) out[k++] = b[j++] as string;
  return out;
}
