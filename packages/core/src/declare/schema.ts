import { z } from "zod";
import { keyPart } from "../keys.js";
import {
  connectionSpecSchema,
  deadlineSchema,
  paramName,
  priorityRuleSchema,
  prioritySchema,
  queueName,
  retryPolicySchema,
  secretsSchema,
  workflowSpecSchema,
} from "../spec.js";

/**
 * The declaration file format (YAML or JSON, same structure). Every object is `.strict()`, so a
 * misspelt field is rejected with its path instead of being silently ignored.
 *
 * ```yaml
 * version: 1                     # optional; the only version so far
 * connections:
 *   - { name: warehouse, operators: [shell, noop], maxParallelism: 4 }
 * workflows:
 *   - name: orders
 *     project: sales
 *     account: acme
 *     cron: "0 2 * * *"
 *     startDate: 2026-11-01T00:00:00Z
 *     config: { region: eu }
 *     tasks:
 *       - name: orders_enriched
 *         operator: { type: shell, command: "echo {{ ds }}", config: { verbose: true } }
 *         connection: warehouse
 *         parents: [ingest/acme/orders_raw, orders_staged]   # full key, or a sibling's bare name
 * tasks:                          # standalone tasks: project, account, cron, startDate of their own
 *   - { project: ingest, account: acme, name: orders_raw, cron: "0 2 * * *",
 *       startDate: 2026-11-01T00:00:00Z, operator: { type: noop } }
 * ```
 *
 * Operators, parents and config values are checked field by field in `shape.ts`, `parents.ts`
 * and `resolve-task.ts` (so the error names the exact path); here they are typed loosely.
 */

/** An ISO-8601 date-time with `Z` or an offset; normalised to a UTC instant with milliseconds. */
export const declaredDateTime = z.iso.datetime({
  offset: true,
  message: "must be an ISO-8601 date-time with a time zone, e.g. 2026-11-01T00:00:00Z",
});

const configMap = z.record(z.string(), z.unknown());

/**
 * A retry policy where every field may be left to the level above (workflow) or the default. No
 * defaults are applied here, so a task's `{ maxAttempts: 5 }` keeps its workflow's other fields.
 */
const retryShape = retryPolicySchema.shape;
export const declaredRetrySchema = z
  .object({
    maxAttempts: retryShape.maxAttempts.unwrap().optional(),
    initialDelayMs: retryShape.initialDelayMs.unwrap().optional(),
    factor: retryShape.factor.unwrap().optional(),
    maxDelayMs: retryShape.maxDelayMs.unwrap().optional(),
    jitter: retryShape.jitter.unwrap().optional(),
  })
  .strict();

/** Fields a workflow passes down to its tasks, and a task may override. */
const inheritable = {
  cron: z.string().min(1).optional(),
  timezone: z.string().min(1).optional(),
  startDate: declaredDateTime.optional(),
  endDate: declaredDateTime.optional(),
  catchup: z.boolean().optional(),
  connection: keyPart.optional(),
  /** The worker queue its attempts go to (workers started with `--queue NAME`). */
  queue: queueName.optional(),
  retry: declaredRetrySchema.optional(),
  idempotent: z.boolean().optional(),
  leaseSeconds: z.number().int().min(1).max(86_400).optional(),
  /** `{ NAME: { env } | { file } | { command } }`: a task's are added to its workflow's. */
  secrets: secretsSchema.optional(),
  /** Its attempts' place among those waiting for the same slots: higher first (default 0). */
  priority: prioritySchema.optional(),
  /** `downstream`: its weight adds its descendants' priorities (default `absolute`). */
  priorityRule: priorityRuleSchema.optional(),
  /** `{ within: "4h" }` or `{ at: "06:00" }`: when each interval must be done. */
  deadline: deadlineSchema.optional(),
};

const taskOwn = {
  partition: keyPart.optional(),
  /** `{ type, ...fields, config? }`: validated against `operatorSchema`; `config` is the inline level. */
  operator: z.unknown(),
  /** Each `project/account/name[/partition]`, `{project, account, name, partition?}` or a sibling's name. */
  parents: z.array(z.unknown()).optional(),
  config: configMap.optional(),
  cacheKey: z.string().optional(),
  /** Its own alert sinks, after its workflow's. */
  alerts: z.array(z.unknown()).optional(),
};

/** A task inside a workflow: project and account default to the workflow's. */
export const declaredWorkflowTaskSchema = z
  .object({
    name: keyPart,
    project: keyPart.optional(),
    account: keyPart.optional(),
    ...inheritable,
    ...taskOwn,
  })
  .strict();
export type DeclaredWorkflowTask = z.output<typeof declaredWorkflowTaskSchema>;

/** A task outside any workflow: it needs its own project, account, cron and startDate. */
export const declaredStandaloneTaskSchema = z
  .object({
    project: keyPart,
    account: keyPart,
    name: keyPart,
    ...inheritable,
    ...taskOwn,
  })
  .strict();
export type DeclaredStandaloneTask = z.output<typeof declaredStandaloneTaskSchema>;

/** A workflow; its `tasks` are checked one by one with `declaredWorkflowTaskSchema`. */
export const declaredWorkflowSchema = z
  .object({
    name: keyPart,
    project: keyPart,
    account: keyPart,
    ...inheritable,
    maxActiveRuns: workflowSpecSchema.shape.maxActiveRuns.optional(),
    maxActiveTasks: workflowSpecSchema.shape.maxActiveTasks.optional(),
    failurePolicy: workflowSpecSchema.shape.failurePolicy.optional(),
    config: configMap.optional(),
    /** `{ NAME: default }`: the params its tasks' templates may read; values are strings. */
    params: z.record(paramName, z.string()).optional(),
    /** Alert sinks for the workflow's runs and all its tasks. */
    alerts: z.array(z.unknown()).optional(),
    tasks: z.array(z.unknown()).min(1, "a workflow needs at least one task"),
  })
  .strict();
export type DeclaredWorkflow = z.output<typeof declaredWorkflowSchema>;

export const declaredConnectionSchema = connectionSpecSchema;

/** The top level of one declaration file; list items are checked one by one. */
export const declarationDocumentSchema = z
  .object({
    version: z.literal(1).optional(),
    connections: z.array(z.unknown()).optional(),
    workflows: z.array(z.unknown()).optional(),
    tasks: z.array(z.unknown()).optional(),
  })
  .strict();
