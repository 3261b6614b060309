import { randomBytes } from "node:crypto";
import { EventSchemas, type SchedulerProjection, type WorkerBinding } from "@chronolog/core";
import { REMOTE_PROTOCOL_VERSION, type RegisterRequest } from "@chronolog/worker";
import type { RemoteConnection } from "./connection.js";
import { isLocalWorkerId, RemoteRefusal } from "./refusal.js";
import { currentTokens, WORKER_ID } from "./worker-records.js";

/** Who a registration's token lets serve what. */
export interface WorkerCaller {
  readonly tokenName: string | undefined;
  /** The queues the token may serve; null: any (an administrator's token). */
  readonly queues: readonly string[] | null;
}

/** Most workers connected at once with one token, and in all. */
export interface WorkerLimits {
  readonly perToken: number;
  readonly total: number;
}

export const DEFAULT_WORKER_LIMITS: WorkerLimits = { perToken: 256, total: 4096 };

/**
 * Refuses (throws a RemoteRefusal) a registration the scheduler may not take: another protocol
 * version, an id a remote worker may not take, a queue the token may not serve, the id of a
 * worker bound to another token (`bound`: the token that registered it first, while it is
 * connected or runs attempts; a token speaks only for its own workers: it may neither drop
 * another's nor take over its attempts), or one worker more than the limits (each holds a
 * command stream and its state here, and its registration an event). Returns the queues it serves.
 */
export function checkRegistration(
  req: RegisterRequest,
  caller: WorkerCaller,
  conns: ReadonlyMap<string, RemoteConnection>,
  bound: WorkerBinding | undefined,
  limits: WorkerLimits = DEFAULT_WORKER_LIMITS,
): string[] {
  if (req.protocol !== REMOTE_PROTOCOL_VERSION)
    throw new RemoteRefusal(
      400,
      "protocol_version",
      `this scheduler speaks worker protocol ${REMOTE_PROTOCOL_VERSION}, the worker speaks ${req.protocol}: run a worker of the scheduler's version`,
      { protocol: REMOTE_PROTOCOL_VERSION },
    );
  if (!WORKER_ID.test(req.id) || isLocalWorkerId(req.id))
    throw new RemoteRefusal(
      400,
      "validation",
      `worker id ${JSON.stringify(req.id.slice(0, 140))} is not one a remote worker may take: letters, digits, _, ., : and -, at most 128, and not of the form the scheduler gives its own workers (w<pid>-<n>)`,
    );
  const queues = [...new Set(req.queues)];
  if (caller.queues !== null) {
    const allowed = new Set(caller.queues);
    const outside = queues.filter((q) => !allowed.has(q));
    if (outside.length > 0)
      throw new RemoteRefusal(
        403,
        "forbidden",
        `token ${caller.tokenName} may serve ${caller.queues.length === 1 ? "queue" : "queues"} ${caller.queues.join(", ")}: not ${outside.join(", ")}`,
        { queues: caller.queues, outside },
      );
  }
  const previous = conns.get(req.id);
  if (previous && previous.tokenName !== caller.tokenName)
    throw new RemoteRefusal(
      409,
      "worker_id_taken",
      `worker ${req.id} is connected with token ${previous.tokenName ?? "(none)"}, not ${caller.tokenName ?? "(none)"}: only that token may replace its connection (choose another id, or try again once it is gone)`,
      { worker: req.id, boundTo: previous.tokenName ?? null },
    );
  if (bound && bound.token !== caller.tokenName)
    throw new RemoteRefusal(
      409,
      "worker_id_taken",
      `worker ${req.id} is bound to token ${bound.token ?? "(none)"}, which registered it first, not ${caller.tokenName ?? "(none)"}: only that token may register it while it is connected or attempts started on it are in flight (choose another id, or try again once they ended)`,
      { worker: req.id, boundTo: bound.token ?? null },
    );
  if (!previous) {
    let mine = 0;
    for (const c of conns.values()) if (c.tokenName === caller.tokenName) mine += 1;
    if (mine >= limits.perToken)
      throw new RemoteRefusal(
        429,
        "too_many_workers",
        `token ${caller.tokenName} already has ${mine} workers connected, the most one token may`,
        { limit: limits.perToken, connected: mine },
      );
    if (conns.size >= limits.total)
      throw new RemoteRefusal(
        429,
        "too_many_workers",
        `this scheduler already has ${conns.size} workers connected, the most it takes`,
        { limit: limits.total, connected: conns.size },
      );
  }
  return queues;
}

/**
 * Of the attempts a registering worker announces, those it gets back: current, of a queue it
 * serves (an attempt of the scheduler's own pool or of another queue never), held by no other
 * connected worker, and started on no other worker than this id.
 */
export function adoptable(
  projection: SchedulerProjection,
  req: RegisterRequest,
  queues: readonly string[],
  owned: (token: string) => boolean,
): string[] {
  const current = currentTokens(projection, req.running);
  const serves = new Set(queues);
  return req.running.filter(
    (t) => current.has(t) && !owned(t) && isWorkersOwn(projection, t, (q) => serves.has(q), req.id),
  );
}

/**
 * Whether worker `id` may take the attempt `token` over on its word: an attempt of a queue it
 * serves, started on no other worker (never the own pool's, another queue's or another worker's).
 */
export function isWorkersOwn(
  projection: SchedulerProjection,
  token: string,
  serves: (queue: string) => boolean,
  id: string,
): boolean {
  const a = projection.workers.attempt(token);
  return a?.queue !== undefined && serves(a.queue) && (a.worker === undefined || a.worker === id);
}

/** The `WorkerConnected` event of a registration taken, with the attempts it got back. */
export function connectedData(
  req: RegisterRequest,
  caller: WorkerCaller,
  queues: readonly string[],
  adopted: readonly string[],
  schedulerId: string,
) {
  return EventSchemas.WorkerConnected.parse({
    worker: req.id,
    host: req.host,
    queues,
    capacity: req.capacity,
    version: `${req.protocol} (${req.version})`,
    scheduler: schedulerId,
    ...(caller.tokenName ? { token: caller.tokenName } : {}),
    running: adopted,
  });
}

/** A registration's connection, with a fresh session, holding nothing yet (`stamp`, `now`: epoch ms). */
export function newConnection(
  req: RegisterRequest,
  caller: WorkerCaller,
  queues: readonly string[],
  stamp: number,
  now: number,
): RemoteConnection {
  return {
    id: req.id,
    host: req.host,
    queues: new Set(queues),
    capacity: req.capacity,
    version: req.version,
    tokenName: caller.tokenName,
    actor: `worker:${req.id}@${req.host}`,
    session: randomBytes(18).toString("base64url"),
    given: new Map(),
    spokenOf: new Map(),
    outbox: [],
    outboxSince: stamp,
    sink: null,
    writing: false,
    lastHeard: now,
    gone: false,
  };
}
