import type { SchedulerProjection, TaskKey } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import type { Context } from "hono";
import {
  authorize,
  type Caller,
  isProjectLimited,
  type Need,
  projectOfStream,
  requireProjects,
} from "../auth.js";
import { DEFAULT_STREAM_LIMITS, Gate, type StreamLimits, StreamRegistry } from "../guard.js";
import type { ApiMetrics } from "../metrics.js";
import { HttpProblem } from "../problem.js";
import { type ReadViewOf, readViews } from "../read-view.js";
import type { ApiState } from "../state.js";
import { projectOf } from "./params.js";

/** What every group of routes is given: the state it reads, and how a request is checked. */
export interface RouteDeps {
  readonly state: ApiState;
  /** Where attempts' output files are (`output/` under it). */
  readonly dataDir: string;
  readonly now: () => number;
  /** The caller, if its token allows what the route needs (401 or 403 otherwise). */
  readonly who: (c: Context, need: Need) => Promise<Caller>;
  /** The log a write goes to, as the caller; refused on a read-only server. */
  readonly writer: (caller: Caller) => EventLog;
  readonly readView: ReadViewOf;
  readonly metrics?: ApiMetrics;
  /** Most events an SSE client may fall behind the log before it is dropped. */
  readonly sseMaxLag: number;
  /** The open live streams: capped per token and in all, closed when their token is revoked. */
  readonly streams: StreamRegistry;
  /** Marks a request whose token the edge has checked against the log (no second lookup). */
  readonly remember: (c: Context) => void;
}

export function routeDeps(o: {
  readonly state: ApiState;
  readonly writeLog: EventLog | null;
  readonly dataDir: string;
  readonly publicRead?: boolean;
  readonly metrics?: ApiMetrics;
  readonly sseMaxLag?: number;
  readonly now?: () => number;
  readonly streamLimits?: Partial<StreamLimits>;
  readonly asOfBuilds?: { readonly concurrent?: number; readonly queued?: number };
}): RouteDeps {
  const { state, writeLog } = o;
  const now = o.now ?? Date.now;
  const checked = new WeakSet<Request>();
  const streams = new StreamRegistry({ ...DEFAULT_STREAM_LIMITS, ...o.streamLimits });
  // The log says a token was revoked: its streams end now, before another event reaches them.
  state.onEvent((e) => {
    if (e.type === "AccessTokenRevoked") streams.revoke(e.data.name);
  });
  const asOf = new Gate(o.asOfBuilds?.concurrent ?? 2, o.asOfBuilds?.queued ?? 8, "views as of a position");
  o.metrics?.watch(streams, asOf);
  return {
    state,
    dataDir: o.dataDir,
    now,
    who: async (c, need) =>
      authorize(c, checked.has(c.req.raw) ? state.tokens : await state.currentTokens(), need, !!o.publicRead),
    remember: (c) => {
      checked.add(c.req.raw);
    },
    streams,
    writer: (caller) => {
      if (!writeLog)
        throw new HttpProblem(
          403,
          "read_only",
          "this server is read-only: start it with --writable to allow writes",
        );
      // Every write of a caller limited to some projects is held to them, whichever route makes
      // it and whatever its decision reaches (a retry's reopened children, a run's other tasks).
      return isProjectLimited(caller)
        ? writeLog.as(caller.actor, (writes) =>
            requireProjects(
              caller,
              projectsWritten(writes, state.projection),
              "make this change, which writes",
            ),
          )
        : writeLog.as(caller.actor);
    },
    readView: readViews(state, o.dataDir, now, asOf),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    sseMaxLag: o.sseMaxLag ?? 50_000,
  };
}

/**
 * The projects a write reaches: a task's, an instance's or a run's stream, its own project (see
 * projectOfStream); a run's, also every task's it holds or the write names. Other streams
 * (connections, tokens, workers, alerts, workflows) are left to the routes that write them.
 */
export function projectsWritten(
  writes: ReadonlyArray<{
    readonly streamId: string;
    readonly events: ReadonlyArray<{ readonly data?: unknown }>;
  }>,
  projection: SchedulerProjection,
): string[] {
  const projects: string[] = [];
  for (const w of writes) {
    const s = w.streamId;
    if (!(s.startsWith("task-") || s.startsWith("instance-") || s.startsWith("run-"))) continue;
    const project = projectOfStream(s, projection);
    if (project !== null) projects.push(project);
    if (!s.startsWith("run-")) continue;
    for (const t of projection.runs.get(s.slice("run-".length))?.tasks ?? []) projects.push(projectOf(t));
    for (const e of w.events) {
      const tasks = (e.data as { tasks?: unknown } | undefined)?.tasks;
      if (Array.isArray(tasks))
        for (const t of tasks) if (typeof t === "object" && t !== null) projects.push((t as TaskKey).project);
    }
  }
  return projects;
}
