import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, normalize, sep } from "node:path";
import {
  EVENT_TYPES,
  evolveInstance,
  formatTaskKey,
  type InstanceState,
  projectedSlots,
  type SchedulerProjection,
  streamCategory,
  type TaskState,
} from "@chronolog/core";
import type { EventLog, RecordedEvent } from "@chronolog/log";
import { describeRun, NotFoundError, renderProblem, type TaskRow, taskRow } from "@chronolog/scheduler";
import { createRoute, type OpenAPIHono, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type Caller, canRead, type Need } from "./auth.js";
import { HttpProblem } from "./problem.js";
import { problemResponses } from "./schemas.js";
import type { ApiState } from "./state.js";
import {
  type GridCellState,
  UiGraph,
  type UiGraphNode,
  UiGraphQuery,
  UiGrid,
  UiGridQuery,
  UiWhoami,
} from "./ui-schemas.js";

/** How many of a task's most recent logical dates the grid shows. */
export const GRID_DATES = 8;

/**
 * Each task's most recent instances (the last `GRID_DATES` logical dates it ran or is running),
 * folded from the attempt streams: the projection forgets an instance once its task moves on,
 * the grid shows the recent ones.
 */
export class RecentInstances {
  private readonly byTask = new Map<string, Map<string, InstanceState>>();
  private readonly byStream = new Map<string, InstanceState>();

  add(e: RecordedEvent): void {
    if (streamCategory(e.streamId) !== "instance") return;
    const before = this.byStream.get(e.streamId);
    const after = evolveInstance(before, e as never, {
      revision: e.revision,
      position: e.position,
      recordedAt: e.metadata.recordedAt,
      streamId: e.streamId,
    });
    if (!after) return;
    const id = formatTaskKey(after.key);
    let dates = this.byTask.get(id);
    if (!dates) {
      dates = new Map();
      this.byTask.set(id, dates);
    }
    if (!before && dates.size >= GRID_DATES) {
      const oldest = [...dates.keys()].sort()[0] as string;
      if (after.logicalDate < oldest) return;
      const dropped = dates.get(oldest) as InstanceState;
      dates.delete(oldest);
      this.byStream.delete(dropped.stream);
    }
    dates.set(after.logicalDate, after);
    this.byStream.set(e.streamId, after);
  }

  /** The task's recent instances, newest logical date first. */
  of(task: string): InstanceState[] {
    const dates = this.byTask.get(task);
    if (!dates) return [];
    return [...dates.values()].sort((a, b) => (a.logicalDate < b.logicalDate ? 1 : -1));
  }

  /** Folds a whole log (to its end, or as far as `upTo`). */
  static async of(log: EventLog, upTo?: bigint): Promise<RecentInstances> {
    const r = new RecentInstances();
    let from = 0n;
    for (;;) {
      const page = await log.readAll({ fromPosition: from, maxCount: 5000 });
      if (page.length === 0) break;
      for (const e of page) if (upTo === undefined || e.position <= upTo) r.add(e);
      from = (page.at(-1) as RecordedEvent).position + 1n;
    }
    return r;
  }
}

/** A grid cell's state: an instance's status, or, for the interval not dispatched yet, its condition. */
function currentCellState(row: TaskRow): GridCellState {
  switch (row.condition) {
    case "not_due":
    case "blocked":
    case "paused":
    case "retired":
    case "held":
    case "ended":
      return row.condition;
    case "stuck":
      return "failed";
    default:
      return row.condition === "running" || row.condition === "queued" ? row.condition : "waiting";
  }
}

export interface UiView {
  readonly projection: SchedulerProjection;
  readonly log: EventLog;
  readonly now: number;
}

export interface UiRouteOptions {
  readonly state: ApiState;
  readonly who: (c: Context, need: Need) => Promise<Caller>;
  /** The live state, or (with `at`) the state as of that position; sets Chronolog-As-Of. */
  readonly readView: (c: Context, at: string | undefined) => Promise<UiView>;
  /** Where the built web UI is (default: services/web/dist beside this package). */
  readonly webRoot?: string;
}

const intQuery = (c: Context, name: string, fallback: number, max: number): number => {
  const text = c.req.query(name);
  if (text === undefined || text === "") return fallback;
  if (!/^\d+$/.test(text)) throw new HttpProblem(400, "validation", `${name} "${text}" is not a number`);
  return Math.min(Number(text), max);
};

/**
 * What the web UI reads that the stable API has no shape for: who the token is, the grid of
 * tasks by their recent logical dates, and the graph of every declaration. Under `/ui/`, for
 * the UI only: these may change with it.
 */
export function uiRoutes(app: OpenAPIHono, o: UiRouteOptions): void {
  const { state } = o;
  // The live grid's history: folded once from the log on first use, then kept up by the follower.
  let live: Promise<RecentInstances> | null = null;
  const pending: RecordedEvent[] = [];
  let liveReady: RecentInstances | null = null;
  state.onEvent((e) => {
    if (liveReady) liveReady.add(e);
    else if (live) pending.push(e);
  });
  const liveHistory = (): Promise<RecentInstances> => {
    live ??= (async () => {
      const upTo = state.head.position;
      const r = await RecentInstances.of(state.log, upTo);
      for (const e of pending) if (e.position > upTo) r.add(e);
      pending.length = 0;
      liveReady = r;
      return r;
    })();
    return live;
  };
  const pastHistories = new Map<string, Promise<RecentInstances>>();
  const historyAt = (at: string | undefined, view: UiView): Promise<RecentInstances> => {
    if (at === undefined) return liveHistory();
    let h = pastHistories.get(at);
    if (!h) {
      h = RecentInstances.of(view.log, BigInt(at));
      pastHistories.set(at, h);
      h.catch(() => pastHistories.delete(at));
      if (pastHistories.size > 4) pastHistories.delete(pastHistories.keys().next().value as string);
    }
    return h;
  };

  // In the OpenAPI document (tagged `ui`) so that the web UI's types are generated from them.
  const ui = { tags: ["ui"], security: [{ bearer: [] }] };
  const answer = <S extends z.ZodType>(schema: S, description: string) => ({
    200: { description, content: { "application/json": { schema } } },
    ...problemResponses(400, 401, 403, 404),
  });
  app.openapi(
    createRoute({
      method: "get",
      path: "/ui/whoami",
      operationId: "uiWhoami",
      summary: "who the token is, and what the UI's live connection listens for",
      ...ui,
      responses: answer(UiWhoami, "the token"),
    }),
    async (c) => {
      const caller = await o.who(c, "read");
      const t = caller.token;
      return c.json(
        {
          name: t?.name ?? null,
          scope: t?.scope ?? null,
          projects: [...(t?.projects ?? [])],
          actor: caller.actor,
          position: String(state.head.position),
          // What a browser's EventSource listens for: it hears named events only by name.
          eventTypes: EVENT_TYPES,
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/ui/grid",
      operationId: "uiGrid",
      summary: "tasks by their recent logical dates, filtered, a page at a time",
      ...ui,
      request: { query: UiGridQuery },
      responses: answer(UiGrid, "a page of the grid"),
    }),
    async (c) => {
      const caller = await o.who(c, "read");
      const at = c.req.query("at") || undefined;
      const view = await o.readView(c, at);
      const history = await historyAt(at, view);
      const project = c.req.query("project") || undefined;
      const workflow = c.req.query("workflow") || undefined;
      const wanted = c.req.query("state") || undefined;
      const limit = intQuery(c, "limit", 100, 500) || 1;
      const page = intQuery(c, "page", 0, 1_000_000);
      const p = view.projection;
      const options = { slots: projectedSlots(p), renderProblem: renderProblem(p) };
      const rowOf = (task: TaskState) => {
        const r = taskRow(p, task, view.now, options);
        const current = p.currentInstance(task);
        const cells: Array<{ logicalDate: string; state: GridCellState }> = history
          .of(task.id)
          .map((i) => ({ logicalDate: i.logicalDate, state: i.status }));
        if (!current && !cells.some((x) => x.logicalDate === task.logicalDate) && task.status !== "retired")
          cells.unshift({ logicalDate: task.logicalDate, state: currentCellState(r) });
        return {
          task: task.id,
          project: task.key.project,
          workflow: task.spec.workflow ?? null,
          status: task.status,
          condition: r.condition,
          reasons: [...r.reasons],
          cells: cells.slice(0, GRID_DATES),
        };
      };
      const ids = [...p.tasks.keys()].sort();
      const kept = ids
        .map((id) => p.tasks.get(id) as TaskState)
        .filter(
          (t) =>
            canRead(caller, t.key.project) &&
            (project === undefined || t.key.project === project) &&
            (workflow === undefined || t.spec.workflow === workflow),
        );
      let rows: ReturnType<typeof rowOf>[];
      let total: number;
      if (wanted !== undefined) {
        const all = kept.map(rowOf).filter((r) => r.cells[0]?.state === wanted);
        total = all.length;
        rows = all.slice(page * limit, page * limit + limit);
      } else {
        total = kept.length;
        rows = kept.slice(page * limit, page * limit + limit).map(rowOf);
      }
      const projects = [...new Set([...p.tasks.values()].map((t) => t.key.project))]
        .filter((x) => canRead(caller, x))
        .sort();
      return c.json(
        {
          rows,
          total,
          page,
          limit,
          pages: Math.max(1, Math.ceil(total / limit)),
          projects,
          workflows: [...p.workflows.values()]
            .filter((w) => canRead(caller, w.project))
            .map((w) => w.name)
            .sort(),
          position: String(p.position),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/ui/graph",
      operationId: "uiGraph",
      summary: "the graph of declared tasks (of a project, a workflow or a run) and their parents",
      ...ui,
      request: { query: UiGraphQuery },
      responses: answer(UiGraph, "nodes and edges"),
    }),
    async (c) => {
      const caller = await o.who(c, "read");
      const at = c.req.query("at") || undefined;
      const view = await o.readView(c, at);
      const p = view.projection;
      const project = c.req.query("project") || undefined;
      const workflow = c.req.query("workflow") || undefined;
      const runId = c.req.query("run") || undefined;
      // A run's tasks and their states: its summary's, as the run page and the CLI show them.
      const run = runId !== undefined ? await runSummaryOf(view.log, p, runId) : undefined;
      const inRun = run ? new Set(run.run.tasks) : null;
      const options = { slots: projectedSlots(p), renderProblem: renderProblem(p) };
      const nodes: Array<z.infer<typeof UiGraphNode>> = [];
      const edges: Array<{ from: string; to: string }> = [];
      const shown = new Set<string>();
      for (const t of p.tasks.values()) {
        if (!canRead(caller, t.key.project)) continue;
        if (inRun && !inRun.has(t.id)) continue;
        if (project !== undefined && t.key.project !== project) continue;
        if (workflow !== undefined && t.spec.workflow !== workflow) continue;
        shown.add(t.id);
      }
      const outside = new Set<string>();
      for (const id of shown) {
        const t = p.tasks.get(id) as TaskState;
        const r = taskRow(p, t, view.now, options);
        nodes.push({
          id,
          project: t.key.project,
          workflow: t.spec.workflow ?? null,
          status: t.status,
          condition: r.condition,
          reasons: [...r.reasons],
          ...(run ? { state: run.summary.tasks[id] ?? "pending" } : {}),
        });
        for (const parent of t.parents) {
          const pid = formatTaskKey(parent);
          edges.push({ from: pid, to: id });
          if (!shown.has(pid)) outside.add(pid);
        }
      }
      for (const pid of outside) {
        const t = p.tasks.get(pid);
        nodes.push(
          t
            ? { id: pid, project: t.key.project, outside: true, condition: "outside", reasons: [] }
            : {
                id: pid,
                project: pid.split("/")[0] as string,
                missing: true,
                condition: "missing",
                reasons: [`${pid} is named as a parent but no such task is declared`],
              },
        );
      }
      return c.json({ nodes, edges, position: String(p.position) }, 200);
    },
  );
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

/**
 * The built web UI's directory: services/web/dist, beside this package (found through the
 * package's own name, so that a program bundling this code finds it too).
 */
export const defaultWebRoot = (): string =>
  join(dirname(createRequire(import.meta.url).resolve("@chronolog/api")), "../../web/dist/");

/**
 * A static file of the web UI for a GET of a path outside the API, or its index.html for any
 * other path (the UI routes on the client); null when the UI is not built.
 */
export function webFile(root: string, path: string): Response | null {
  const index = join(root, "index.html");
  if (!existsSync(index)) return null;
  const rel = normalize(decodeURIComponent(path)).replace(/^([/\\])+/, "");
  let file = join(root, rel);
  if (
    !file.startsWith(root.endsWith(sep) ? root : root + sep) ||
    !existsSync(file) ||
    !statSync(file).isFile()
  )
    file = index;
  const type = TYPES[extname(file)] ?? "application/octet-stream";
  const immutable = file !== index && rel.startsWith("assets");
  return new Response(readFileSync(file), {
    headers: {
      "content-type": type,
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    },
  });
}

/** A run's view, or 404 naming it. */
async function runSummaryOf(log: EventLog, p: SchedulerProjection, runId: string) {
  try {
    return await describeRun(log, p, runId);
  } catch (error) {
    if (error instanceof NotFoundError) throw new HttpProblem(404, "not_found", `no run ${runId} is known`);
    throw error;
  }
}
