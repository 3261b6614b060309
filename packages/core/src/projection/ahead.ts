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

/** The queues of one set of counted slots: held task -> its queue. */
type Queues = Map<string, Queue>;

/**
 * The queues found for each `Slots` object: every task's `why` in one listing (which counts the
 * slots once) finds all of them in one walk of the tasks, not one walk each.
 */
const found = new WeakMap<Slots, Queues>();

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
  let queues = found.get(slots);
  if (!queues) {
    queues = queuesOf(view, nowMs, { ...options, slots });
    found.set(slots, queues);
  }
  const queue = queues.get(task.id);
  const i = queue?.at.get(task.id);
  if (!queue || i === undefined) return undefined;
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

/** Every task held for a connection's or a run's slot, in the queue of each, in order. */
function queuesOf(
  view: WeightedView,
  nowMs: number,
  options: DecideOptions & { readonly slots: Slots },
): Queues {
  const weights = view.weights ?? new PriorityWeights(view.tasks, childrenFromTasks(view.tasks));
  const byKey = new Map<string, Waiter[]>();
  const keyOf = new Map<string, string>();
  for (const t of view.tasks.values()) {
    if (t.status !== "active" || (t.spec.connection === undefined && t.spec.workflow === undefined)) continue;
    const d = decideTask(view, t, nowMs, options.slots, options);
    if (d.kind !== "held") continue;
    const h = d.hold;
    const key =
      h.on === "connection" ? `connection:${h.connection}` : h.on === "run_slots" ? `run:${h.runId}` : null;
    if (key === null) continue;
    const list = byKey.get(key) ?? [];
    if (list.length === 0) byKey.set(key, list);
    list.push({ claim: claimOf(t, weights), logicalDate: t.logicalDate, since: 0, id: t.id });
    keyOf.set(t.id, key);
  }
  const shared = new Map<string, Queue>();
  for (const [key, list] of byKey) {
    list.sort(compareWaiters);
    shared.set(key, { waiters: list, at: new Map(list.map((w, i) => [w.id, i])) });
  }
  const queues: Queues = new Map();
  for (const [id, key] of keyOf) queues.set(id, shared.get(key) as Queue);
  return queues;
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
