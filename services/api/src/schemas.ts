import {
  connectionSpecSchema,
  declarationDocumentSchema,
  EVENT_TYPES,
  EventSchemas,
  eventCatalog,
  RUN_TASK_STATES,
  type RunTaskState,
  taskSpecSchema,
  workflowSpecSchema,
} from "@chronolog/core";
import { z } from "@hono/zod-openapi";

/**
 * The API's schemas. Declarations, task specs and event data are the core's own schemas (the
 * ones `declare` and the log validate with); only the envelopes around them are defined here.
 */

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
  })
  .catchall(z.unknown())
  .openapi("Problem", { description: "RFC 9457 problem details, with the typed error's own fields" });

export const problemResponses = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: `problem (${s})`, content: { "application/problem+json": { schema: Problem } } },
    ]),
  );

/** A position or revision: a decimal string (they outgrow JSON's safe integers). */
const position = z.string().regex(/^\d+$/).openapi({ example: "42" });

export const Metadata = z
  .object({
    eventId: z.string(),
    actor: z.string(),
    causationId: z.string().nullable(),
    correlationId: z.string().nullable(),
    schemaVersion: z.number().int(),
    recordedAt: z.string(),
    prevHash: z.string(),
    hash: z.string(),
  })
  .openapi("EventMetadata");

/** A recorded event: one member per type of the catalog, with that type's data schema. */
export const RecordedEvent = z
  .union(
    EVENT_TYPES.map((type) =>
      z.object({
        position,
        streamId: z.string(),
        revision: position,
        type: z.literal(type),
        data: eventCatalog[type].schema as z.ZodType,
        metadata: Metadata,
      }),
    ) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]],
  )
  .openapi("RecordedEvent");

// The core's schemas go into the document as they are (zod 4 gives each schema its own methods,
// so those made before this module have no `.openapi`; they are described inline).
export const DeclarationDocument = declarationDocumentSchema as unknown as z.ZodType;
export const TaskSpec = taskSpecSchema as unknown as z.ZodType;
export const ConnectionSpec = connectionSpecSchema as unknown as z.ZodType;
export const WorkflowSpec = workflowSpecSchema as unknown as z.ZodType;

const Change = z.object({ field: z.string(), from: z.unknown(), to: z.unknown() });
export const DeclareOutcome = z
  .object({
    dryRun: z.boolean(),
    tasks: z.array(z.object({ task: z.string(), outcome: z.string(), changes: z.array(Change) })),
    connections: z.array(z.object({ name: z.string(), outcome: z.string() })),
    workflows: z.array(z.object({ name: z.string(), outcome: z.string() })),
    warnings: z.array(z.unknown()),
  })
  .openapi("DeclareOutcome");

export const NextStep = z
  .object({
    action: z.enum([
      "retry",
      "mark_succeeded",
      "mark_skipped",
      "abandon",
      "resume",
      "report_succeeded",
      "report_failed",
    ]),
    task: z.string(),
    interval: z.string().nullable(),
    command: z.string(),
  })
  .openapi("NextStep", { description: "a way out for an operator, and the CLI command that does it" });

export const TaskRow = z
  .object({
    task: z.string(),
    status: z.string(),
    condition: z.string(),
    logicalDate: z.string(),
    prevIntervalStart: z.string().nullable(),
    nextRunDate: z.string().nullable(),
    reasons: z.array(z.string()),
    decision: z.unknown(),
    nextSteps: z.array(NextStep),
  })
  .openapi("TaskRow");

export const TaskPage = z
  .object({ items: z.array(TaskRow), next: z.string().nullable() })
  .openapi("TaskPage", { description: "a page of tasks; `next` is the cursor of the next page" });

export const ReportRow = z
  .object({
    logicalDate: z.string(),
    outcome: z.enum(["succeeded", "failed"]),
    by: z.string(),
    reason: z.string().nullable(),
    at: z.string(),
    standing: z.enum(["in", "awaited", "held"]).openapi({
      description:
        "in: completed (or stopped at); awaited: the interval the task stands at; held: ahead of it",
    }),
  })
  .openapi("ReportRow");

export const ShownPriority = z
  .object({
    priority: z.number().int(),
    rule: z.enum(["absolute", "downstream"]),
    weight: z.number().int(),
    claim: z.object({ backfill: z.boolean(), weight: z.number().int() }),
  })
  .openapi("ShownPriority", {
    description:
      "the task's declared priority and rule, its weight (with downstream: its subtree's sum), and how its current interval competes for slots (claim.backfill: a backfill's interval, after every scheduled one)",
  });

export const DeadlineStanding = z
  .object({
    deadline: z.object({ within: z.string().optional(), at: z.string().optional() }),
    logicalDate: z
      .string()
      .openapi({ description: "the interval it is for: the first the task has not done" }),
    dueAt: z.string(),
    state: z.enum(["on_track", "at_risk", "missed"]),
    estimate: z.object({
      doneAt: z
        .string()
        .nullable()
        .openapi({ description: "when it would be done at the recent pace; null: not without an operator" }),
      path: z.array(z.object({ task: z.string(), logicalDate: z.string(), ms: z.number() })),
      unknown: z.array(z.string()).openapi({ description: "tasks on the way with no recorded duration yet" }),
    }),
    cause: z
      .object({
        task: z.string(),
        logicalDate: z.string(),
        state: z.string(),
        detail: z.string().nullable(),
        path: z.array(z.string()),
        text: z.string(),
      })
      .nullable()
      .openapi({ description: "what holds the interval, the waits followed to their end" }),
    metLate: z
      .object({ logicalDate: z.string(), text: z.string(), at: z.string() })
      .nullable()
      .openapi({ description: "the task's latest interval done after its deadline" }),
  })
  .openapi("DeadlineStanding", {
    description: "a task's deadline: when its current interval is due, the estimate and the root cause",
  });

export const TaskDetail = z
  .object({
    task: z.object({ id: z.string(), status: z.string(), spec: TaskSpec }).catchall(z.unknown()),
    priority: ShownPriority,
    condition: z.string(),
    reasons: z.array(z.string()),
    decision: z.unknown(),
    nextSteps: z.array(NextStep),
    instance: z.unknown(),
    reports: z.array(ReportRow).openapi({
      description: "an outside task's latest reported intervals, the latest first, and who reported them",
    }),
    deadline: DeadlineStanding.nullable(),
  })
  .openapi("TaskDetail");

export const IntervalAction = z
  .object({
    task: z.string(),
    logicalDate: z.string(),
    was: z.string().openapi({ description: "how the interval stood before: failed, upstream_failed, ..." }),
    reopened: z.array(z.string()).openapi({ description: "descendants closed as upstream_failed, reopened" }),
    run: z
      .object({ runId: z.string(), reopened: z.boolean(), try: z.number().int() })
      .nullable()
      .openapi({ description: "the workflow run, reopened as a new try or going already" }),
    attempt: z.number().int().nullable().openapi({ description: "retry: the attempt to come" }),
    maxAttempts: z.number().int().openapi({ description: "retry: its fresh retry budget" }),
    message: z.string(),
    position,
  })
  .openapi("IntervalAction", { description: "what a retry or a mark of an interval did" });

export const IntervalReport = z
  .object({
    task: z.string(),
    logicalDate: z.string(),
    outcome: z.enum(["succeeded", "failed"]),
    status: z.enum(["recorded", "held", "unchanged"]).openapi({
      description:
        "recorded: for the interval the task stands at; held: ahead of it (counts once the earlier intervals are in); unchanged: the same report was made before, nothing written",
    }),
    awaited: z.string().openapi({ description: "the interval the task stands at: the first one not in" }),
    before: z.object({ outcome: z.string(), by: z.string(), at: z.string() }).nullable().openapi({
      description: "the report this one replaces (failed, then succeeded), or the same one made before",
    }),
    reopened: z.array(z.string()).openapi({ description: "descendants closed as upstream_failed, reopened" }),
    message: z.string(),
    position: position.openapi({
      description: "log position of the last event written (-1: nothing written)",
    }),
  })
  .openapi("IntervalReport", { description: "what a report of an outside task's interval did" });

export const Attempt = z
  .object({
    logicalDate: z.string(),
    stream: z.string(),
    attempt: z.number().int(),
    token: z.string(),
    status: z.string(),
    budget: z.object({ place: z.number().int().nullable(), of: z.number().int() }),
    budgetText: z.string(),
  })
  .catchall(z.unknown())
  .openapi("Attempt");

export const Written = z
  .object({ position })
  .catchall(z.unknown())
  .openapi("Written", { description: "what was written, and the log position of its last event" });

const runTaskState = z.enum(RUN_TASK_STATES as [RunTaskState, ...RunTaskState[]]);

export const RunSummary = z
  .object({
    state: z.enum(["running", "success", "failed", "partial"]),
    tasks: z.record(z.string(), runTaskState),
    counts: z.record(runTaskState, z.number().int()),
    ended: z.number().int(),
    total: z.number().int(),
    waiting: z.array(z.string()),
    text: z.string(),
  })
  .openapi("RunSummary", {
    description:
      "a run's state, each task's state in it (`pending`: nothing yet in its latest try), their counts, and why it waits; every surface shows these",
  });

export const Run = z
  .object({
    runId: z.string(),
    workflow: z.string(),
    logicalDate: z.string(),
    status: z.string(),
    try: z.number().int(),
    tasks: z.array(z.string()),
    summary: RunSummary,
    blockedBy: z.array(z.string()),
    nextSteps: z.array(NextStep).openapi({
      description: "the ways out of its halted tasks (retry, mark), each as the CLI command",
    }),
  })
  .catchall(z.unknown())
  .openapi("Run");

export const BudgetPlace = z
  .object({ place: z.number().int().nullable(), of: z.number().int() })
  .openapi("BudgetPlace", {
    description:
      "an attempt's place in its interval's retry budget: every attempt of the interval counts (reruns' too) except interrupted ones (place null)",
  });

export const RunAttempt = z
  .object({
    attempt: z.number().int(),
    token: z.string(),
    status: z.string(),
    budget: BudgetPlace,
    budgetText: z.string(),
  })
  .catchall(z.unknown())
  .openapi("RunAttempt");

export const RunDetail = z
  .object({
    run: Run.omit({ summary: true, blockedBy: true }),
    summary: RunSummary,
    blockedBy: z.array(z.string()),
    try: z.number().int(),
    tries: z.array(z.object({ try: z.number().int(), status: z.string() }).catchall(z.unknown())),
    instances: z.array(
      z.object({
        task: z.string(),
        state: runTaskState,
        kept: z.boolean(),
        instance: z.unknown(),
        attempts: z.array(RunAttempt),
      }),
    ),
  })
  .openapi("RunDetail");

export const Head = z
  .object({ position: z.string(), hash: z.string() })
  .openapi("LogHead", { description: "the last event's position and hash (position -1: the log is empty)" });

export const Verify = z
  .object({
    ok: z.boolean(),
    checked: z.number().int(),
    headPosition: z.string(),
    headHash: z.string(),
    break: z.object({ position: z.string(), reason: z.string() }).nullable(),
  })
  .openapi("VerifyResult");

export const AccessToken = z
  .object({
    name: EventSchemas.accessTokenName,
    scope: z.enum(EventSchemas.ACCESS_SCOPES),
    projects: z.array(z.string()),
  })
  .openapi("AccessToken");

const WorkerFields = {
  id: z.string(),
  host: z.string(),
  queues: z.array(z.string()),
  capacity: z.number().int(),
  version: z.string(),
  scheduler: z.string().nullable().openapi({ description: "the scheduler it connected to" }),
  token: z.string().nullable().openapi({ description: "the name of the token it connected with" }),
  since: z.string().openapi({ description: "when it connected" }),
};

export const WorkerAttempt = z
  .object({
    task: z.string(),
    logicalDate: z.string(),
    attempt: z.number().int(),
    queue: z.string().nullable(),
    startedAt: z.string().nullable(),
  })
  .openapi("WorkerAttempt", { description: "an attempt a remote worker runs now" });

export const Worker = z
  .object({
    ...WorkerFields,
    busy: z.number().int().openapi({ description: "attempts it runs now (started on it, not ended)" }),
    lastHeard: z.string().openapi({
      description: "when the log last heard of it: its connection, an attempt's start, heartbeat or report",
    }),
    running: z
      .array(WorkerAttempt)
      .openapi({ description: "what it runs, of the projects the token may read" }),
    hidden: z.number().int().openapi({ description: "attempts it runs of projects the token may not read" }),
  })
  .openapi("Worker", { description: "a remote worker connected to a scheduler" });

export const DisconnectedWorker = z
  .object({ ...WorkerFields, until: z.string(), reason: z.string() })
  .openapi("DisconnectedWorker", { description: "a remote worker gone recently, and why" });

export const WorkerListing = z
  .object({
    connected: z.array(Worker),
    disconnected: z
      .array(DisconnectedWorker)
      .optional()
      .openapi({ description: "with all=true: the workers gone recently, the latest first" }),
  })
  .openapi("WorkerListing");
