import { z } from "zod";
import { taskKeySchema } from "../keys.js";
import { lazySchema } from "../lazy-schema.js";
import {
  ALERT_KINDS,
  alertSinkSchema,
  connectionSpecSchema,
  instant,
  prioritySchema,
  queueName,
  storedConnectionSpecSchema,
  taskSpecSchema,
  workflowSpecSchema,
} from "../spec.js";

const key = taskKeySchema;
const token = lazySchema(() => z.string().min(8).max(128));
const attempt = lazySchema(() => z.number().int().min(1));
const reason = lazySchema(() => z.string().min(1).max(2000));
/** An attempt's whole output, kept in a file on the worker's host. */
export const outputFileSchema = lazySchema(() =>
  z
    .object({
      /** Absolute path on the worker's host. */
      path: z.string().min(1).max(4096),
      /** The file's size, a cut marker included. */
      bytes: z.number().int().min(0),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      /** Output dropped from the middle, past the size limit. */
      cutBytes: z.number().int().min(0).default(0),
      /** Why the file stops short (a failed write), when it does. */
      error: z.string().max(2000).optional(),
    })
    .strict(),
);

const outputTail = lazySchema(() =>
  z
    .object({
      stdoutTail: z.string().max(65_536).default(""),
      stderrTail: z.string().max(65_536).default(""),
      file: outputFileSchema.optional(),
    })
    .strict(),
);

const fieldChange = lazySchema(() =>
  z.object({ field: z.string(), from: z.unknown(), to: z.unknown() }).strict(),
);

// ---- task stream -------------------------------------------------------------------------

export const TaskDeclared = lazySchema(() =>
  z
    .object({
      key,
      spec: taskSpecSchema,
      /** First logical date the task will run for. */
      logicalDate: instant,
      nextRunDate: instant,
    })
    .strict(),
);

export const TaskDeclarationChanged = lazySchema(() =>
  z.object({ key, spec: taskSpecSchema, changes: z.array(fieldChange).min(1) }).strict(),
);

export const TaskPaused = lazySchema(() => z.object({ key, reason: reason.optional() }).strict());
export const TaskResumed = lazySchema(() => z.object({ key }).strict());
export const TaskRetired = lazySchema(() => z.object({ key, reason: reason.optional() }).strict());
/** A retired task made active again (declared again with revive): it runs on from where it stopped. */
export const TaskRevived = lazySchema(() => z.object({ key, reason: reason.optional() }).strict());

/** The schedule position set back (backfill) or jumped ahead (catch-up disabled). */
export const IntervalReset = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      nextRunDate: instant,
      prevIntervalStart: instant.nullable(),
      reason: z.enum(["backfill", "catchup_disabled", "operator", "schedule_changed", "backfill_cancelled"]),
      /** Why, in an operator's words (a backfill's cancel). */
      note: reason.optional(),
      /** Backfill range end: once the task has completed it, it returns to `resume`. */
      until: instant.optional(),
      /** The position the task had before a backfill, restored when the range is done. */
      resume: z
        .object({ logicalDate: instant, nextRunDate: instant, prevIntervalStart: instant.nullable() })
        .strict()
        .optional(),
      backfillId: z.string().optional(),
      /**
       * First interval of the range, when the walk starts later than it: a range that joined a
       * backfill already under way, whose first intervals are walked already.
       */
      from: instant.optional(),
      /**
       * The priority the backfill's intervals compete with (`backfill --priority N`); absent, a
       * backfill's intervals come after every scheduled one.
       */
      priority: prioritySchema.optional(),
      /**
       * The walk goes on at the interval it stands at, whose attempt is under way: that attempt
       * still counts for the interval (a range that joined a backfill pending there).
       */
      continues: z.boolean().optional(),
    })
    .strict(),
);

/** The success path: prev_interval_start := logical_date; logical_date and next_run_date advance. */
export const IntervalCompleted = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      nextLogicalDate: instant,
      nextRunDate: instant,
      attempt: attempt.optional(),
    })
    .strict(),
);

/** An interval that ended without success (failed, upstream_failed, abandoned): the task stops there. */
export const IntervalFailed = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      state: z.enum(["failed", "upstream_failed", "abandoned", "cancelled"]),
      reason,
    })
    .strict(),
);

/**
 * An operator reopened the task's halted interval: the stop recorded there is lifted and the
 * interval is decided afresh (its parents' gate, its limits), so a new attempt is dispatched for
 * it, with a fresh retry budget. `parent`: it was reopened because that parent's interval was
 * retried or marked (it had been closed as upstream_failed for it).
 */
export const IntervalRetried = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      by: z.string().min(1).max(500),
      reason: reason.optional(),
      parent: key.optional(),
    })
    .strict(),
);

// ---- instance (attempt) stream ------------------------------------------------------------

export const DispatchIntended = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      attempt,
      token,
      runId: z.string().optional(),
      connection: z.string().optional(),
      /** The rendered operator, exactly what the worker will run. */
      operator: z.record(z.string(), z.unknown()),
      idempotent: z.boolean(),
      leaseSeconds: z.number().int().min(1),
      notBefore: instant.optional(),
      /** The rendered cache key, for a task that declares one. */
      cacheKey: z.string().max(1024).optional(),
    })
    .strict(),
);

export const AttemptStarted = lazySchema(() =>
  z
    .object({
      attempt,
      token,
      workerId: z.string().min(1),
      pid: z.number().int().optional(),
      leaseExpiresAt: instant,
      /** Where the worker writes the attempt's whole output while it runs. */
      outputPath: z.string().min(1).max(4096).optional(),
    })
    .strict(),
);

export const AttemptLeaseExtended = lazySchema(() =>
  z.object({ attempt, token, leaseExpiresAt: instant }).strict(),
);

export const AttemptHeartbeatExpired = lazySchema(() =>
  z.object({ attempt, token, leaseExpiredAt: instant, workerId: z.string().optional() }).strict(),
);

export const AttemptSucceeded = lazySchema(() =>
  z
    .object({
      attempt,
      token,
      durationMs: z.number().min(0),
      exitCode: z.number().int().nullable().default(null),
      output: outputTail.optional(),
      cacheHit: z.boolean().default(false),
      /** The attempt's cache key: a later attempt with the same key is a cache hit. */
      cacheKey: z.string().max(1024).optional(),
      /** The worker, when the attempt's start was not recorded on its own (it ended first). */
      workerId: z.string().optional(),
    })
    .strict(),
);

/** Version 1 carried the error as a plain string; version 2 gives it a kind. */
export const AttemptFailedV1 = lazySchema(() =>
  z
    .object({
      attempt,
      token,
      error: z.string(),
      exitCode: z.number().int().nullable().default(null),
      durationMs: z.number().min(0).optional(),
      output: outputTail.optional(),
    })
    .strict(),
);

export const AttemptFailed = lazySchema(() =>
  z
    .object({
      attempt,
      token,
      error: z
        .object({
          kind: z.enum([
            "exit_code",
            "signal",
            "timeout",
            "exception",
            "http_status",
            "lost",
            "interrupted",
            "unknown",
          ]),
          message: z.string(),
        })
        .strict(),
      exitCode: z.number().int().nullable().default(null),
      durationMs: z.number().min(0).optional(),
      output: outputTail.optional(),
      /** When a retry is due, if the policy allows one. */
      retryAt: instant.optional(),
      /** The worker, when the attempt's start was not recorded on its own (it ended first). */
      workerId: z.string().optional(),
    })
    .strict(),
);

export const AttemptAbandoned = lazySchema(() =>
  z
    .object({
      attempt,
      token,
      reason,
      by: z.string().min(1),
      /** Try again with a new attempt (and token) rather than stop at this interval. */
      retry: z.boolean().default(false),
    })
    .strict(),
);

export const AttemptCancelled = lazySchema(() => z.object({ attempt, token, reason }).strict());

export const InstanceSkipped = lazySchema(() =>
  z.object({ key, logicalDate: instant, reason, runId: z.string().optional() }).strict(),
);

export const InstanceUpstreamFailed = lazySchema(() =>
  z.object({ key, logicalDate: instant, failedParent: key, reason, runId: z.string().optional() }).strict(),
);

/** A task of a fail-fast run that had not started when the run failed: it never will. */
export const InstanceCancelled = lazySchema(() =>
  z.object({ key, logicalDate: instant, reason, runId: z.string().optional() }).strict(),
);

/**
 * An operator marked the interval done by hand (succeeded or skipped), with why: it counts as
 * done for its children, and the task advances past it as after a success or a skip.
 */
export const IntervalMarked = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      outcome: z.enum(["success", "skipped"]),
      reason,
      by: z.string().min(1).max(500),
      runId: z.string().optional(),
    })
    .strict(),
);

/**
 * Whoever produces an outside task's data reported one of its intervals succeeded or failed
 * (with why, for a failure). Written on the interval's attempt stream: the task completes it
 * (or stops at it) when it stands at it, so a report ahead of the task is held until then.
 */
export const IntervalReported = lazySchema(() =>
  z
    .object({
      key,
      logicalDate: instant,
      outcome: z.enum(["succeeded", "failed"]),
      reason: reason.optional(),
      by: z.string().min(1).max(500),
      runId: z.string().optional(),
    })
    .strict(),
);

export const CompletionRejected = lazySchema(() =>
  z
    .object({
      token: z.string().max(256),
      attempt: z.number().int().optional(),
      report: z.enum(["started", "heartbeat", "succeeded", "failed"]),
      reason: z.enum(["unknown_token", "stale_token", "already_terminal"]),
      currentToken: z.string().optional(),
      workerId: z.string().optional(),
    })
    .strict(),
);

// ---- run stream ---------------------------------------------------------------------------

export const RunStarted = lazySchema(() =>
  z
    .object({
      runId: z.string().min(1),
      workflow: z.string().min(1),
      logicalDate: instant,
      tasks: z.array(key),
      trigger: z.enum(["schedule", "manual", "rerun", "backfill"]).default("schedule"),
      params: z.record(z.string(), z.string()).default({}),
      /**
       * Which try of the run this starts: 1 for its first start, one more for each rerun,
       * trigger or backfill of the same date (absent in older events: counted by the fold).
       */
      try: z.number().int().min(1).optional(),
      /** Who asked for this try, when its writer acts for someone (a backfill's operator). */
      requestedBy: z.string().min(1).max(500).optional(),
    })
    .strict(),
);

export const RunFinished = lazySchema(() =>
  z
    .object({
      runId: z.string().min(1),
      state: z.enum(["success", "failed", "partial"]),
      workflow: z.string().min(1),
      logicalDate: instant,
      succeeded: z.array(z.string()).default([]),
      failed: z.array(z.string()).default([]),
      skipped: z.array(z.string()).default([]),
      upstreamFailed: z.array(z.string()).default([]),
      cancelled: z.array(z.string()).default([]),
      /**
       * Tasks whose outcome an operator marked by hand (they are in succeeded or skipped too);
       * absent when none was.
       */
      marked: z.array(z.string()).optional(),
    })
    .strict(),
);

// ---- alert streams ------------------------------------------------------------------------

/**
 * An alert, raised in the same append as what it is about (a task halting on a failure, an
 * attempt left for an operator, a run failing), with the sinks it goes to as declared then.
 * One stream per alert (`alert-<kind>:<subject>`), written at `no_stream`: raised once.
 */
export const AlertRaised = lazySchema(() =>
  z
    .object({
      alertId: z.string().min(1),
      kind: z.enum(ALERT_KINDS),
      task: key.optional(),
      workflow: z.string().optional(),
      runId: z.string().optional(),
      logicalDate: instant.optional(),
      reason: z.string().max(4000),
      sinks: z.array(alertSinkSchema).min(1),
    })
    .strict(),
);

export const AlertDelivered = lazySchema(() =>
  z
    .object({ alertId: z.string().min(1), sink: z.number().int().min(0), attempt: z.number().int().min(1) })
    .strict(),
);

/** A delivery that failed; `retryAt` when it is tried again, none when it was the last try. */
export const AlertDeliveryFailed = lazySchema(() =>
  z
    .object({
      alertId: z.string().min(1),
      sink: z.number().int().min(0),
      attempt: z.number().int().min(1),
      error: z.string().max(4000),
      retryAt: instant.optional(),
    })
    .strict(),
);

// ---- declarations other than tasks --------------------------------------------------------

export const ConnectionDeclared = lazySchema(() => z.object({ spec: connectionSpecSchema }).strict());
/** v1: its spec had a `sortOrder` that nothing read (dropped in v2: priorities order every connection). */
export const ConnectionDeclaredV1 = lazySchema(() => z.object({ spec: storedConnectionSpecSchema }).strict());
/**
 * Slots of a connection taken by dispatches, written in the same atomic append as their
 * DispatchIntended events with a compare-and-set on the connection stream: the contended
 * counter that keeps `maxParallelism` across every scheduler sharing the log. Slots are freed
 * by the attempts ending (on their own streams), so a scheduler that has not seen a release
 * yet only undercounts what is free.
 */
export const ConnectionSlotsTaken = lazySchema(() =>
  z
    .object({
      connection: z.string().min(1),
      attempts: z
        .array(
          z
            .object({ stream: z.string().min(1), attempt: z.number().int().min(1), token: z.string().min(1) })
            .strict(),
        )
        .min(1),
    })
    .strict(),
);
export const WorkflowDeclared = lazySchema(() => z.object({ spec: workflowSpecSchema }).strict());
/**
 * A workflow retired for good, in the same append as the retirement of each of its tasks: it is
 * no longer declared (no run starts), its runs stay readable, and declaring it again needs
 * revive for its tasks.
 */
export const WorkflowRetired = lazySchema(() =>
  z.object({ name: z.string().min(1), tasks: z.array(key), reason: reason.optional() }).strict(),
);

// ---- access to the HTTP API -------------------------------------------------------------------

/** What a token of the HTTP API may do: read; read and declare; read and operate; everything. */
export const ACCESS_SCOPES = ["read", "declare", "operate", "admin", "work"] as const;
export const accessTokenName = lazySchema(() =>
  z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9_-]{0,63}$/,
      "is lower-case letters, digits, _ and -, at most 64, not starting with _ or -",
    ),
);
/**
 * A token issued for the HTTP API. Only the SHA-256 of its secret is kept: the token itself is
 * shown once, to whoever issued it. `projects` limits what it may declare or operate on (empty:
 * every project); `readProjects` limits what it may read the same way.
 */
export const AccessTokenIssued = lazySchema(() =>
  z
    .object({
      name: accessTokenName,
      scope: z.enum(ACCESS_SCOPES),
      projects: z.array(z.string().min(1).max(128)).max(100),
      /** The projects it may read (absent or empty: every project). */
      readProjects: z.array(z.string().min(1).max(128)).max(100).optional(),
      /** A `work` token's queues: the only ones a worker connecting with it may serve. */
      queues: z.array(queueName).min(1).max(64).optional(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    })
    .strict(),
);
/** A token revoked: it is refused from then on, and its name may be issued again. */
export const AccessTokenRevoked = lazySchema(() =>
  z.object({ name: accessTokenName, reason: reason.optional() }).strict(),
);

// ---- remote workers ------------------------------------------------------------------------

const workerId = lazySchema(() =>
  z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/,
      "a worker id is letters, digits, _, ., : and -, at most 128",
    ),
);
/**
 * A worker on another host connected to a scheduler and registered: from then on the scheduler
 * sends it attempts of its queues, at most `capacity` at once. Written on the worker's stream
 * (`worker-<id>`) by the scheduler it connected to, before any attempt is sent to it.
 */
export const WorkerConnected = lazySchema(() =>
  z
    .object({
      worker: workerId,
      host: z.string().min(1).max(255),
      queues: z.array(queueName).min(1).max(64),
      capacity: z.number().int().min(1).max(100_000),
      /** The worker's protocol version and build, e.g. `1 (chronolog 0.1.0)`. */
      version: z.string().min(1).max(128),
      /** The scheduler it connected to (its member id when several share a Kafka log). */
      scheduler: z.string().min(1).max(255).optional(),
      /** The name of the token it connected with. */
      token: z.string().min(1).max(64).optional(),
      /** Attempts it still ran when it connected (after a reconnect): their dispatch tokens. */
      running: z.array(z.string().min(1)).max(100_000).default([]),
    })
    .strict(),
);
/**
 * A remote worker is gone from the scheduler: it said goodbye, its link broke, it fell behind
 * (its buffer filled) or its heartbeats stopped. Its attempts are handled as a lost worker's
 * (the reconcile loop), unless it reconnects and announces them first.
 */
export const WorkerDisconnected = lazySchema(() =>
  z
    .object({
      worker: workerId,
      reason: reason,
      /** The scheduler it is gone from (a worker may be connected to several sharing a Kafka log); absent: from all. */
      scheduler: z.string().min(1).max(255).optional(),
    })
    .strict(),
);
/**
 * A worker's report the scheduler refused and did not apply: its token was never dispatched to
 * that worker, or its attempt is no longer current (a forged, replayed or misdirected report).
 * Written on the worker's stream, so that what a worker tried is on record beside its
 * connections, and alerting or an audit can count it by type.
 */
export const WorkerReportRefused = lazySchema(() =>
  z
    .object({
      worker: workerId,
      /** The report's kind (started, heartbeat, succeeded, failed). */
      kind: z.string().min(1).max(32),
      token: z.string().min(1).max(256),
      instanceStream: z.string().min(1).max(1024).optional(),
      reason: reason,
    })
    .strict(),
);

/**
 * Reports of one worker refused past what is recorded one by one (at most 20 a minute each
 * worker, as WorkerReportRefused): still refused, never applied, and counted here once, at
 * the end of the minute or when the worker goes. A worker holding a valid token, hostile or
 * broken, may not grow the log faster than that.
 */
export const WorkerReportRefusalsCounted = lazySchema(() =>
  z
    .object({
      worker: workerId,
      /** How many reports were refused and not recorded one by one. */
      count: z.number().int().min(1),
      /** When the first of them was refused, and when they were counted. */
      from: instant,
      until: instant,
      /** The reason of the latest of them. */
      reason: reason,
    })
    .strict(),
);

// ---- free-form (the `log append` command, tests) ------------------------------------------

/** A note written by an operator or a test: free JSON data, still schema-checked as an object. */
export const Note = lazySchema(() => z.object({ text: z.string().max(65_536) }).catchall(z.unknown()));
