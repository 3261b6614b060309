import { shortInstant } from "../schedule/interval.js";
import {
  type DecideOptions,
  decideTask,
  type Hold,
  projectedSlots,
  type Slots,
  type TaskView,
} from "../task/decide-task.js";
import {
  type Claim,
  childrenFromTasks,
  claimOf,
  compareClaims,
  compareWaiters,
  PriorityWeights,
} from "../task/priority.js";
import type { TaskState } from "../task/state.js";

/** How many of those ahead are named; the rest are counted. */
const NAMED = 5;

/** A view that may hold the weights it keeps (the projection does). */
export type WeightedView = TaskView & { readonly weights?: PriorityWeights };

interface Waiter {
  readonly claim: Claim;
  readonly logicalDate: string;
  /** How long each has waited for a run's slot is the scheduler's to know: not compared here. */
  readonly since: number;
  readonly id: string;
}

/** The tasks held for one connection's or run's slots, in the order a free one is given out. */
interface Queue {
  readonly waiters: readonly Waiter[];
  /** task id -> its place in `waiters`. */
  readonly at: ReadonlyMap<string, number>;
}

/**
 * The queues found on one set of counted slots: the tasks that use each connection and those of
 * each workflow (one walk of the tasks, deciding none), and each queue once it was asked for
 * (deciding only the tasks that may be in it). Every task's `why` in one listing, which counts
 * the slots once, shares them.
 */
interface Found {
  readonly byConnection: Map<string, TaskState[]>;
  readonly byWorkflow: Map<string, TaskState[]>;
  /** `connection:NAME` or `run:ID` -> its queue. */
  readonly queues: Map<string, Queue>;
}

const found = new WeakMap<Slots, Found>();

/**
 * Who is ahead of `task` for the slot `hold` waits for, in words: the attempts held for the same
 * slots that a free one goes to first, each with why (`ingest/acme/x 2026-12-01 (priority 5)`,
 * `... (waiting longer)`), after the task's own claim. Undefined for a hold that is no queue.
 */
export function aheadOf(
  view: WeightedView,
  task: TaskState,
  hold: Hold,
  nowMs: number,
  options: DecideOptions & { readonly slots?: Slots } = {},
): string | undefined {
  if (hold.on !== "connection" && hold.on !== "run_slots") return undefined;
  const slots = options.slots ?? projectedSlots(view);
  const queue = queueOf(view, hold, nowMs, { ...options, slots });
  const i = queue.at.get(task.id);
  if (i === undefined) return undefined;
  const { waiters } = queue;
  const me = waiters[i] as Waiter;
  // A run's queue: those of its claim are served in the order they began to wait, not known here.
  const first = hold.on === "run_slots" ? edge(waiters, (w) => compareClaims(w.claim, me.claim) >= 0) : i;
  const last = hold.on === "run_slots" ? edge(waiters, (w) => compareClaims(w.claim, me.claim) > 0) : i + 1;
  const alike = last - first - 1;
  const own = `its ${me.claim.backfill ? `a backfill's, after the schedule, weight ${me.claim.weight}` : `priority ${me.claim.weight}`}`;
  const more = alike > 0 ? `; ${alike} more at its priority, served in the order they began to wait` : "";
  if (first === 0)
    return alike > 0 ? `none ahead of it by priority (${own})${more}` : `first in line for it (${own})`;
  const named = waiters
    .slice(0, Math.min(first, NAMED))
    .map((w) => `${w.id} ${shortInstant(w.logicalDate)} (${why(w, me)})`);
  if (first > NAMED) named.push(`and ${first - NAMED} more`);
  return `${first} ahead of it (${own}): ${named.join(", ")}${more}`;
}

/** The tasks held for the same slots as `hold`, in the order a free one is given out. */
function queueOf(
  view: WeightedView,
  hold: Hold & { on: "connection" | "run_slots" },
  nowMs: number,
  options: DecideOptions & { readonly slots: Slots },
): Queue {
  let f = found.get(options.slots);
  if (!f) {
    f = { byConnection: new Map(), byWorkflow: new Map(), queues: new Map() };
    for (const t of view.tasks.values()) {
      if (t.status !== "active") continue;
      if (t.spec.connection !== undefined) push(f.byConnection, t.spec.connection, t);
      if (t.spec.workflow !== undefined) push(f.byWorkflow, t.spec.workflow, t);
    }
    found.set(options.slots, f);
  }
  const key = hold.on === "connection" ? `connection:${hold.connection}` : `run:${hold.runId}`;
  const known = f.queues.get(key);
  if (known) return known;
  const weights = view.weights ?? new PriorityWeights(view.tasks, childrenFromTasks(view.tasks));
  const candidates =
    hold.on === "connection"
      ? (f.byConnection.get(hold.connection) ?? [])
      : (f.byWorkflow.get(hold.workflow) ?? []).filter((t) => t.logicalDate === hold.logicalDate);
  const waiters: Waiter[] = [];
  for (const t of candidates) {
    const d = decideTask(view, t, nowMs, options.slots, options);
    if (d.kind !== "held" || !sameSlots(d.hold, hold)) continue;
    waiters.push({ claim: claimOf(t, weights), logicalDate: t.logicalDate, since: 0, id: t.id });
  }
  waiters.sort(compareWaiters);
  const queue = { waiters, at: new Map(waiters.map((w, i) => [w.id, i])) };
  f.queues.set(key, queue);
  return queue;
}

function sameSlots(a: Hold, b: Hold & { on: "connection" | "run_slots" }): boolean {
  if (b.on === "connection") return a.on === "connection" && a.connection === b.connection;
  return a.on === "run_slots" && a.runId === b.runId;
}

function push(map: Map<string, TaskState[]>, key: string, t: TaskState): void {
  const list = map.get(key);
  if (list) list.push(t);
  else map.set(key, [t]);
}

/** The first index at which `past` holds (it holds from there to the end). */
function edge(waiters: readonly Waiter[], past: (w: Waiter) => boolean): number {
  let lo = 0;
  let hi = waiters.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (past(waiters[mid] as Waiter)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Why a waiter goes before `me`. */
function why(other: Waiter, me: Waiter): string {
  const c = other.claim;
  if (c.backfill !== me.claim.backfill) return `priority ${c.weight}: a backfill's intervals come after it`;
  if (c.weight !== me.claim.weight) return `${c.backfill ? "a backfill at weight" : "priority"} ${c.weight}`;
  if (other.logicalDate !== me.logicalDate) return "waiting longer";
  return "same priority and interval, first by name";
}
