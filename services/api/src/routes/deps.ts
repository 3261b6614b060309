import type { EventLog } from "@chronolog/log";
import type { Context } from "hono";
import { authorize, type Caller, type Need } from "../auth.js";
import type { ApiMetrics } from "../metrics.js";
import { HttpProblem } from "../problem.js";
import { type ReadViewOf, readViews } from "../read-view.js";
import type { ApiState } from "../state.js";

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
}

export function routeDeps(o: {
  readonly state: ApiState;
  readonly writeLog: EventLog | null;
  readonly dataDir: string;
  readonly publicRead?: boolean;
  readonly metrics?: ApiMetrics;
  readonly sseMaxLag?: number;
  readonly now?: () => number;
}): RouteDeps {
  const { state, writeLog } = o;
  const now = o.now ?? Date.now;
  return {
    state,
    dataDir: o.dataDir,
    now,
    who: async (c, need) => authorize(c, await state.currentTokens(), need, !!o.publicRead),
    writer: (caller) => {
      if (!writeLog)
        throw new HttpProblem(
          403,
          "read_only",
          "this server is read-only: start it with --writable to allow writes",
        );
      return writeLog.as(caller.actor);
    },
    readView: readViews(state, o.dataDir, now),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    sseMaxLag: o.sseMaxLag ?? 50_000,
  };
}
