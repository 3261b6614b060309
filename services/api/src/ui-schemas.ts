import {
  EventSchemas,
  type InstanceStatus,
  RUN_TASK_STATES,
  type RunTaskState,
  type TaskCondition,
  type TaskStatus,
} from "@chronolog/core";
import { z } from "@hono/zod-openapi";

/**
 * The shapes of what `/ui/` answers, in the OpenAPI document: the web UI's types are generated
 * from it, so a change here that the UI does not follow fails the UI's type check.
 */

/**
 * Every member of a union of strings, in the order given: a record of them is what makes the
 * compiler refuse a list that misses one (or names one the union does not have).
 */
const members = <T extends string>(all: Record<T, true>): [T, ...T[]] => Object.keys(all) as [T, ...T[]];

const INSTANCE_STATUSES = members<InstanceStatus>({
  success: true,
  failed: true,
  upstream_failed: true,
  skipped: true,
  running: true,
  queued: true,
  retry_wait: true,
  abandoned: true,
  cancelled: true,
});

/** A task's interval that has no instance yet: where the task stands instead (see `currentCellState`). */
export type PendingCellState = "not_due" | "blocked" | "paused" | "retired" | "held" | "ended" | "waiting";
const PENDING_CELL_STATES = members<PendingCellState>({
  not_due: true,
  blocked: true,
  waiting: true,
  paused: true,
  held: true,
  ended: true,
  retired: true,
});

export type GridCellState = InstanceStatus | PendingCellState;

/** Every state a cell of the grid can show, in the order the UI offers them as a filter. */
export const GRID_CELL_STATES: readonly GridCellState[] = [...INSTANCE_STATUSES, ...PENDING_CELL_STATES];

const TASK_CONDITIONS = members<TaskCondition>({
  retired: true,
  paused: true,
  failed: true,
  upstream_failed: true,
  skipped: true,
  running: true,
  queued: true,
  retry_wait: true,
  succeeded: true,
  not_due: true,
  ended: true,
  catching_up: true,
  blocked: true,
  held: true,
  ready: true,
  stuck: true,
  unknown: true,
});
const TASK_STATUSES = members<TaskStatus>({ active: true, paused: true, retired: true });

const position = z.string().regex(/^\d+$/).openapi({ example: "42" });

export const UiWhoami = z
  .object({
    name: z.string().nullable().openapi({ description: "the token's name; null: no token (public reads)" }),
    scope: z.enum(EventSchemas.ACCESS_SCOPES).nullable(),
    projects: z.array(z.string()),
    actor: z.string(),
    position: z.string().openapi({ description: "the log's head when asked: live events follow it" }),
    eventTypes: z
      .array(z.string())
      .openapi({ description: "the event types a browser's EventSource listens for" }),
  })
  .openapi("UiWhoami");

export const UiGridCell = z
  .object({
    logicalDate: z.string(),
    state: z.enum(GRID_CELL_STATES as [GridCellState, ...GridCellState[]]).openapi({
      description: "the instance's status, or for an interval not dispatched yet where its task stands",
    }),
  })
  .openapi("UiGridCell");

export const UiGridRow = z
  .object({
    task: z.string(),
    project: z.string(),
    workflow: z.string().nullable(),
    status: z.enum(TASK_STATUSES),
    condition: z.enum(TASK_CONDITIONS),
    reasons: z.array(z.string()),
    cells: z.array(UiGridCell).openapi({ description: "the most recent logical dates, newest first" }),
  })
  .openapi("UiGridRow");

export const UiGrid = z
  .object({
    rows: z.array(UiGridRow),
    total: z.number().int(),
    page: z.number().int(),
    limit: z.number().int(),
    pages: z.number().int(),
    projects: z.array(z.string()),
    workflows: z.array(z.string()),
    position,
  })
  .openapi("UiGrid");

export const UiGraphNode = z
  .object({
    id: z.string(),
    project: z.string(),
    workflow: z.string().nullable().optional(),
    status: z.enum(TASK_STATUSES).optional(),
    condition: z.union([z.enum(TASK_CONDITIONS), z.literal("outside"), z.literal("missing")]),
    reasons: z.array(z.string()),
    state: z
      .enum(RUN_TASK_STATES as [RunTaskState, ...RunTaskState[]])
      .optional()
      .openapi({ description: "with `run`: the task's state in that run, as the run's summary gives it" }),
    outside: z.literal(true).optional().openapi({ description: "a parent outside the filter, shown dimmed" }),
    missing: z.literal(true).optional().openapi({ description: "named as a parent, never declared" }),
  })
  .openapi("UiGraphNode");

export const UiGraph = z
  .object({
    nodes: z.array(UiGraphNode),
    edges: z.array(z.object({ from: z.string(), to: z.string() })),
    position,
  })
  .openapi("UiGraph");

const filter = z.string().optional();
export const UiGridQuery = z.object({
  project: filter,
  workflow: filter,
  state: filter.openapi({ description: "only rows whose newest cell is in this state" }),
  page: filter.openapi({ description: "from 0" }),
  limit: filter.openapi({ description: "rows a page, at most 500 (default 100)" }),
  at: filter.openapi({ description: "the state as of this log position" }),
});

export const UiGraphQuery = z.object({
  project: filter,
  workflow: filter,
  run: filter.openapi({ description: "the tasks of this run, coloured by their state in it" }),
  at: filter.openapi({ description: "the state as of this log position" }),
});
