import {
  type AlertState,
  declarationOf,
  evolveAlert,
  foldInstance,
  type InstanceState,
  jsonWithBigints,
  SchedulerProjection,
  streamCategory,
} from "@chronolog/core";
import { type EventLog, logAsOf, type RecordedEvent } from "@chronolog/log";
import { catchUp } from "./projection-loader.js";
import { readRun } from "./runs.js";
import { projectionAsOf } from "./snapshot/as-of.js";

/** One field of a task, instance, run or declaration that is not what it was. */
export interface FieldChange {
  readonly field: string;
  readonly from: unknown;
  readonly to: unknown;
}

/** Something whose state changed between two positions, and the events that changed it. */
export interface StateChange {
  readonly kind: "task" | "instance" | "run" | "connection" | "workflow" | "alert" | "other";
  /** The task id, `task@logicalDate` for an instance, the run id, or the stream. */
  readonly id: string;
  readonly stream: string;
  readonly changes: readonly FieldChange[];
  readonly events: ReadonlyArray<{
    readonly position: bigint;
    readonly type: string;
    readonly actor: string;
  }>;
}

export interface StateDiff {
  readonly from: bigint;
  readonly to: bigint;
  readonly events: number;
  readonly changes: readonly StateChange[];
}

const same = (a: unknown, b: unknown) => jsonWithBigints(a) === jsonWithBigints(b);

function fields(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
  names: readonly string[],
): FieldChange[] {
  const out: FieldChange[] = [];
  for (const f of names) {
    const from = before?.[f] ?? null;
    const to = after?.[f] ?? null;
    if (!same(from, to)) out.push({ field: f, from, to });
  }
  return out;
}

const TASK_FIELDS = ["status", "logicalDate", "prevIntervalStart", "nextRunDate", "failure", "backfill"];
const RUN_FIELDS = ["status", "try", "trigger", "outcomes", "finishedAt"];

/** An alert as a diff shows it: its kind, and how its sinks' deliveries stand. */
function alertSummary(events: readonly RecordedEvent[]): Record<string, unknown> | undefined {
  let state: AlertState | undefined;
  for (const e of events)
    state = evolveAlert(state, e, {
      revision: e.revision,
      recordedAt: e.metadata.recordedAt,
      streamId: e.streamId,
    });
  if (!state) return undefined;
  return {
    kind: state.raised.kind,
    delivered: state.sinks.filter((s) => s.delivered).length,
    pending: state.sinks.filter((s) => !s.delivered && s.retryAt !== null).length,
    "given up": state.sinks.filter((s) => !s.delivered && s.retryAt === null && s.attempts > 0).length,
  };
}

function instanceSummary(inst: InstanceState | undefined): Record<string, unknown> | undefined {
  if (!inst) return undefined;
  const a = inst.attempts.at(-1);
  return {
    status: inst.status,
    attempts: inst.attempts.length,
    attempt: a ? { attempt: a.attempt, token: a.token, status: a.status } : null,
  };
}

/**
 * What changed between the state right after `from` and right after `to`: every task,
 * instance, run and declaration whose state differs, old -> new, with the events in between
 * that changed it. Both states are folded as `--at` folds them (the second from the first).
 */
export async function diffPositions(
  log: EventLog,
  dir: string,
  from: bigint,
  to: bigint,
): Promise<StateDiff> {
  const a = await projectionAsOf(log, dir, from);
  const after = SchedulerProjection.fromSnapshot(a.projection.toSnapshot());
  const toView = logAsOf(log, to);
  await catchUp(toView, after);
  const byStream = new Map<string, RecordedEvent[]>();
  let count = 0;
  for (let next = a.position + 1n; next <= to; ) {
    const page = await toView.readAll({ fromPosition: next, maxCount: 5000 });
    if (page.length === 0) break;
    for (const e of page) {
      const list = byStream.get(e.streamId) ?? [];
      list.push(e);
      byStream.set(e.streamId, list);
    }
    count += page.length;
    next = (page.at(-1) as RecordedEvent).position + 1n;
  }
  const fromView = a.log;
  const changes: StateChange[] = [];
  for (const [stream, events] of byStream) {
    const category = streamCategory(stream);
    const id = stream.slice(category.length + 1);
    const list = events.map((e) => ({ position: e.position, type: e.type, actor: e.metadata.actor }));
    let kind: StateChange["kind"] = "other";
    let changed: FieldChange[] = [];
    if (category === "task") {
      kind = "task";
      const before = a.projection.tasks.get(id);
      const now = after.tasks.get(id);
      changed = fields(
        before as unknown as Record<string, unknown>,
        now as unknown as Record<string, unknown>,
        TASK_FIELDS,
      );
      // The whole declaration: its parents are held beside the rest.
      if (!same(before ? declarationOf(before) : null, now ? declarationOf(now) : null))
        changed.push({ field: "declaration", from: before ? "declared" : null, to: now ? "changed" : null });
    } else if (category === "instance") {
      kind = "instance";
      const before = foldInstance(await fromView.readStream(stream));
      const now = foldInstance(await toView.readStream(stream));
      changed = fields(instanceSummary(before), instanceSummary(now), ["status", "attempts", "attempt"]);
    } else if (category === "run") {
      kind = "run";
      const before = (await readRun(fromView, id)).run;
      const now = (await readRun(toView, id)).run;
      changed = fields(
        before as unknown as Record<string, unknown>,
        now as unknown as Record<string, unknown>,
        RUN_FIELDS,
      );
    } else if (category === "connection") {
      kind = "connection";
      changed = fields({ spec: a.projection.connections.get(id) }, { spec: after.connections.get(id) }, [
        "spec",
      ]);
    } else if (category === "alert") {
      kind = "alert";
      changed = fields(
        alertSummary(await fromView.readStream(stream)),
        alertSummary(await toView.readStream(stream)),
        ["kind", "delivered", "pending", "given up"],
      );
    } else if (category === "workflow") {
      kind = "workflow";
      changed = fields({ spec: a.projection.workflows.get(id) }, { spec: after.workflows.get(id) }, ["spec"]);
    }
    changes.push({ kind, id, stream, changes: changed, events: list });
  }
  changes.sort((x, y) => ((x.events[0]?.position ?? 0n) < (y.events[0]?.position ?? 0n) ? -1 : 1));
  return { from: a.position, to, events: count, changes };
}
