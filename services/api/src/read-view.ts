import { type SchedulerProjection, ValidationError } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { projectionAsOf } from "@chronolog/scheduler";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Gate } from "./guard.js";
import type { ApiState } from "./state.js";
import { TaskIndex } from "./task-index.js";

/**
 * What a read answers from: the live projection, or with `?at=POSITION` the state as of that
 * position (folded from the ladder of snapshots, and a log that shows nothing after it), with
 * the time its reasons are given at.
 */
export interface ReadView {
  readonly projection: SchedulerProjection;
  readonly log: EventLog;
  readonly now: number;
  readonly tasks: TaskIndex;
}

/** The view a request asks for with its `at`; sets `Chronolog-As-Of` when it is a past one. */
export type ReadViewOf = (c: Context, at: string | undefined) => Promise<ReadView>;

/**
 * `?at=`, the one query parameter every read that can look back takes; a route with more
 * parameters extends it. Checked when the view is read (its refusals name `at`, and the log's head).
 */
export const atQuery = z.object({
  at: z.string().optional().openapi({ description: "the state as of this log position" }),
});

/** The position `at` names, refused unless it is a whole number. */
function positionOf(at: string): bigint {
  if (!/^\d+$/.test(at))
    throw new ValidationError("at", [{ path: "", message: `"${at}" is not a log position (0 or more)` }]);
  return BigInt(at);
}

/** How many past positions' views are kept (each is a whole projection). */
const KEPT = 8;

/**
 * The views reads answer from: the live one, and the last few positions asked for, each folded
 * once however many requests ask for it at the same time, and only a few folded at once
 * (`gate`: the others wait their turn, or are refused with 503 when too many wait).
 */
export function readViews(state: ApiState, dataDir: string, now: () => number, gate: Gate): ReadViewOf {
  const tasks = new TaskIndex(state.projection);
  const recent = new Map<bigint, Promise<ReadView & { hash: string; recordedAt: string }>>();
  return async (c, at) => {
    if (at === undefined) return { projection: state.projection, log: state.log, now: now(), tasks };
    const position = positionOf(at);
    const head = await state.log.headPosition();
    if (position > head)
      throw new ValidationError("at", [
        { path: "", message: `position ${position} is past the log's head (${head})` },
      ]);
    let view = recent.get(position);
    if (!view) {
      view = gate
        .run(() => projectionAsOf(state.log, dataDir, position))
        .then((a) => ({
          projection: a.projection,
          log: a.log,
          now: a.event ? Date.parse(a.event.recordedAt) : now(),
          tasks: new TaskIndex(a.projection),
          hash: a.event?.hash ?? "",
          recordedAt: a.event?.recordedAt ?? "",
        }));
      recent.set(position, view);
      view.catch(() => recent.delete(position));
      if (recent.size > KEPT) recent.delete(recent.keys().next().value as bigint);
    }
    const v = await view;
    c.header("chronolog-as-of", `${position} ${v.hash} ${v.recordedAt}`);
    return v;
  };
}
