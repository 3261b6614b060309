import { z } from "zod";
import { keyPart, taskKeySchema } from "./keys.js";
import { lazySchema } from "./lazy-schema.js";

/** ISO-8601 instant in UTC with milliseconds, e.g. `2026-11-28T02:00:00.000Z`. */
export const instant = lazySchema(() => z.iso.datetime({ offset: false, precision: 3 }));

export const retryPolicySchema = lazySchema(() =>
  z
    .object({
      /** Total attempts allowed, the first included. */
      maxAttempts: z.number().int().min(1).max(100).default(1),
      /** Delay before attempt n+1 is `min(maxDelayMs, initialDelayMs * factor^(n-1))`, plus jitter. */
      initialDelayMs: z.number().int().min(0).default(1000),
      factor: z.number().min(1).max(10).default(2),
      maxDelayMs: z.number().int().min(0).default(300_000),
      /** Fraction of the delay (0..1) added at random, the random part injected by the caller. */
      jitter: z.number().min(0).max(1).default(0.1),
    })
    .strict(),
);
export type RetryPolicy = z.output<typeof retryPolicySchema>;

/**
 * The retry policy of a task that declares none: one attempt, the field defaults above (written
 * out, so that loading this module makes no schema; test/spec-defaults.test.ts checks they agree).
 */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  maxAttempts: 1,
  initialDelayMs: 1000,
  factor: 2,
  maxDelayMs: 300_000,
  jitter: 0.1,
});

/**
 * A secret's name: also the environment variable a shell or node task finds its value in, so an
 * environment variable's name (letters, digits and `_`, not starting with a digit), and not one
 * of Chronolog's own (`CHRONOLOG_*`).
 */
export const secretName = lazySchema(() =>
  z
    .string()
    .min(1, "must not be empty")
    .max(128, "must be at most 128 characters")
    .regex(
      /^[A-Za-z_][A-Za-z0-9_]*$/,
      "a secret's name is an environment variable's name: letters, digits and _, not starting with a digit",
    )
    .refine(
      (name) => !/^CHRONOLOG_/i.test(name),
      "a secret's name must not start with CHRONOLOG_ (Chronolog's own variables)",
    ),
);

/**
 * Where a secret's value is found, by the worker that runs the attempt, at run time: one of its
 * environment variables, a file on its host (one trailing newline dropped), or what a command
 * prints (run by `/bin/sh -c` as the worker's user, one trailing newline dropped). Only this
 * reference is declared and recorded, never the value.
 */
export const secretSourceSchema = lazySchema(() =>
  z
    .object({
      env: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable's name")
        .refine(
          (v) => !/^CHRONOLOG_/i.test(v),
          "Chronolog's own settings (CHRONOLOG_*) cannot be a secret's source",
        )
        .optional(),
      file: z.string().min(1).optional(),
      command: z.string().min(1).optional(),
    })
    .strict()
    .refine(
      (s) => [s.env, s.file, s.command].filter((v) => v !== undefined).length === 1,
      'a secret\'s source is one of { env: VAR }, { file: PATH } or { command: "..." }',
    ),
);
export type SecretSource = z.output<typeof secretSourceSchema>;

/**
 * What is wrong with a URL an http operator or alert sink would fetch, if anything: it must be an
 * absolute http or https URL. A template (`{{ ... }}`, `{% ... %}`) is rendered when it runs, so
 * one that starts with a tag is judged only then, and one with text before its first tag must
 * start with `http://` or `https://`; the whole is judged again once rendered. A declaration is
 * held to it; the schemas are not, so that what an older version stored (an alert raised with a
 * sink declared then) is still written.
 */
export function httpUrlProblem(url: string): string | undefined {
  const tag = url.search(/\{\{|\{%/);
  if (tag === 0) return undefined;
  if (tag > 0 ? /^https?:\/\//i.test(url) : URL.canParse(url) && /^https?:$/.test(new URL(url).protocol))
    return undefined;
  const shown = url.length > 80 ? `${url.slice(0, 80)}...` : url;
  return `${JSON.stringify(shown)} is not an http or https URL (https://host/path)`;
}

/** `{ NAME: source }`: the secrets a connection, workflow or task declares. */
export const secretsSchema = lazySchema(() =>
  z.record(z.string(), secretSourceSchema).superRefine((secrets, ctx) => {
    for (const name of Object.keys(secrets)) {
      const checked = secretName.safeParse(name);
      if (!checked.success) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: checked.error.issues[0]?.message ?? "bad name",
        });
      }
    }
  }),
);
export type Secrets = z.output<typeof secretsSchema>;

/** A Python identifier (ASCII): letters, digits and `_`, not starting with a digit. */
const PY_IDENT = "[A-Za-z_][A-Za-z0-9_]*";

/**
 * A Python function's reference, `module.path:qualname` (as setuptools' entry points write it):
 * the dotted module a Python worker imports, and the dotted name of the function in it.
 */
export const pythonFunctionRef = lazySchema(() =>
  z
    .string()
    .regex(
      new RegExp(`^${PY_IDENT}(\\.${PY_IDENT})*:${PY_IDENT}(\\.${PY_IDENT})*$`),
      'a python function is "module.path:qualname" (dotted Python names, one colon), e.g. "mypipeline.orders:load"',
    ),
);

export const operatorSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    z
      .object({
        type: z.literal("shell"),
        command: z.string().min(1),
        cwd: z.string().optional(),
        env: z.record(z.string(), z.string()).default({}),
        timeoutMs: z.number().int().positive().optional(),
        /** Staged outputs: on success the attempt's staging directory is moved here, atomically. */
        publishTo: z.string().min(1).optional(),
      })
      .strict(),
    z
      .object({
        type: z.literal("http"),
        method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]).default("GET"),
        url: z.string().min(1),
        headers: z.record(z.string(), z.string()).default({}),
        body: z.string().optional(),
        timeoutMs: z.number().int().positive().optional(),
        expectStatus: z.array(z.number().int()).optional(),
      })
      .strict(),
    z
      .object({
        type: z.literal("node"),
        module: z.string().min(1),
        export: z.string().min(1).default("default"),
        args: z.record(z.string(), z.unknown()).default({}),
        timeoutMs: z.number().int().positive().optional(),
        /** Staged outputs: on success the attempt's staging directory is moved here, atomically. */
        publishTo: z.string().min(1).optional(),
      })
      .strict(),
    z
      .object({
        type: z.literal("python"),
        /** `module.path:qualname`, the function a Python worker imports and calls. */
        function: pythonFunctionRef,
        /** Keyword arguments the function is called with (templates rendered, as a node task's). */
        args: z.record(z.string(), z.unknown()).default({}),
        /** The attempt's time: the function sees its end as `ctx.deadline`, and is stopped there. */
        timeoutMs: z.number().int().positive().optional(),
      })
      .strict(),
    z.object({ type: z.literal("noop") }).strict(),
    /**
     * A task Chronolog never runs: whoever produces its data reports each interval succeeded or
     * failed (`chronolog report`, `POST /api/v1/tasks/{key}/intervals/{date}`).
     */
    z.object({ type: z.literal("external") }).strict(),
  ]),
);
export type OperatorSpec = z.output<typeof operatorSchema>;
export type OperatorType = OperatorSpec["type"];

/** Whether a task is an outside one: never dispatched, its intervals reported by their producer. */
export function isExternal(spec: { readonly operator: OperatorSpec }): boolean {
  return spec.operator.type === "external";
}

/**
 * What an alert is raised for. The deadline kinds are raised only for tasks that declare a
 * deadline: a sink that takes every kind (no `on`) gets nothing new from a task without one.
 */
export const ALERT_KINDS = [
  "task_failed",
  "needs_operator",
  "run_failed",
  "deadline_at_risk",
  "deadline_missed",
  "deadline_met_late",
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/**
 * Where an alert goes: a shell command or an HTTP request, templates (Liquid) over `alert`
 * (kind, task, interval, run, workflow, reason, message). In a command every value is
 * shell-quoted, in a URL URL-encoded, as in operators.
 */
export const alertSinkSchema = lazySchema(() =>
  z
    .object({
      /** The kinds it is called for (default: all). */
      on: z
        .array(z.enum(ALERT_KINDS))
        .min(1)
        .default([...ALERT_KINDS]),
      command: z.string().min(1).optional(),
      http: z
        .object({
          url: z.string().min(1),
          method: z.enum(["POST", "PUT", "GET"]).default("POST"),
          headers: z.record(z.string(), z.string()).default({}),
          body: z.string().optional(),
        })
        .strict()
        .optional(),
      /** How long one delivery may take before it counts as failed. */
      timeoutMs: z.number().int().min(1).max(600_000).default(10_000),
    })
    .strict()
    .refine((s) => (s.command === undefined) !== (s.http === undefined), {
      message: "an alert sink is either a command or an http request",
    }),
);
export type AlertSink = z.output<typeof alertSinkSchema>;

/** A duration as declared: a whole number and a unit, `30s`, `90m`, `4h`, `1d`. */
export const DURATION_TEXT = /^([1-9][0-9]{0,6})(s|m|h|d)$/;
const DURATION_UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The longest `within` a deadline may say: a week. */
export const MAX_DEADLINE_WITHIN_MS = 7 * 86_400_000;

/** A declared duration in milliseconds (undefined: not one). */
export function durationMs(text: string): number | undefined {
  const m = DURATION_TEXT.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * DURATION_UNIT_MS[m[2] as keyof typeof DURATION_UNIT_MS];
}

/**
 * When an interval must be done: `within` a duration after its end (on the task's clock), or
 * `at` a local time (`HH:MM`, in the task's timezone) on the day it ends (the next day when that
 * time is before its end).
 */
export const deadlineSchema = lazySchema(() =>
  z
    .object({
      within: z
        .string()
        .refine((t) => durationMs(t) !== undefined, {
          message: 'a duration is a whole number and a unit (s, m, h or d), e.g. "30s", "90m", "4h"',
        })
        .refine((t) => (durationMs(t) ?? 0) <= MAX_DEADLINE_WITHIN_MS, {
          message: "a deadline is at most 7d after the end of its interval",
        })
        .optional(),
      at: z
        .string()
        .regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, 'a local time is "HH:MM" on a 24-hour clock, e.g. "06:00"')
        .optional(),
    })
    .strict()
    .refine((d) => (d.within === undefined) !== (d.at === undefined), {
      message: 'a deadline is either { within: "4h" } or { at: "06:00" }',
    }),
);
export type DeadlineSpec = z.output<typeof deadlineSchema>;

/**
 * A worker queue's name: where a task's attempts run. A task with no queue runs in the
 * scheduler's own worker pool; one with a queue runs only on workers that serve that queue.
 */
export const queueName = lazySchema(() =>
  z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9_.-]{0,63}$/,
      "a queue name is lower-case letters, digits, _, . and -, at most 64, starting with a letter or digit",
    ),
);

/** The bounds of a declared priority. */
export const PRIORITY_MIN = -1000;
export const PRIORITY_MAX = 1000;

/** A priority: an integer from -1000 to 1000 (0 when none is declared). */
export const prioritySchema = lazySchema(() =>
  z
    .number({ message: "a priority is an integer from -1000 to 1000" })
    .int("a priority is an integer from -1000 to 1000")
    .min(PRIORITY_MIN, "a priority is an integer from -1000 to 1000")
    .max(PRIORITY_MAX, "a priority is an integer from -1000 to 1000"),
);

/**
 * How a task's weight is counted: `absolute`, its own priority; `downstream`, its own plus those
 * of every task below it (each counted once), so that what much depends on goes first.
 */
export const priorityRuleSchema = lazySchema(() =>
  z.enum(["absolute", "downstream"], {
    message: "priorityRule is absolute or downstream",
  }),
);
export type PriorityRule = z.output<typeof priorityRuleSchema>;

/** The normalised declaration of one task, as recorded in TaskDeclared / TaskDeclarationChanged. */
export const taskSpecSchema = lazySchema(() =>
  z
    .object({
      key: taskKeySchema,
      workflow: keyPart.optional(),
      cron: z.string().min(1),
      timezone: z.string().min(1).default("UTC"),
      startDate: instant,
      endDate: instant.optional(),
      catchup: z.boolean().default(true),
      operator: operatorSchema,
      connection: keyPart.optional(),
      /** The worker queue its attempts go to; absent: the scheduler's own pool. */
      queue: queueName.optional(),
      parents: z.array(taskKeySchema).default([]),
      retry: retryPolicySchema.default(DEFAULT_RETRY),
      idempotent: z.boolean().default(false),
      /** Merged config (workflow -> task -> inline), visible to templates as `config`. */
      config: z.record(z.string(), z.unknown()).default({}),
      cacheKey: z.string().optional(),
      /** Seconds a worker's lease lasts without a heartbeat. */
      leaseSeconds: z.number().int().min(1).max(86_400).default(30),
      /** Where its alerts go: its workflow's sinks, then its own. */
      alerts: z.array(alertSinkSchema).default([]),
      /** Its secrets by reference: its connection's, its workflow's, then its own (by name). */
      secrets: secretsSchema.optional(),
      /** Where its attempts stand among those waiting for the same slots: higher first (absent: 0). */
      priority: prioritySchema.optional(),
      /** `downstream`: its weight adds its descendants' priorities (absent: `absolute`, its own). */
      priorityRule: priorityRuleSchema.optional(),
      /** When each interval must be done (its own, else its workflow's); none: no deadline. */
      deadline: deadlineSchema.optional(),
    })
    .strict(),
);
export type TaskSpec = z.output<typeof taskSpecSchema>;
export type TaskSpecInput = z.input<typeof taskSpecSchema>;

export const connectionSpecSchema = lazySchema(() =>
  z
    .object({
      name: keyPart,
      /** Which operators may use it; empty means any. */
      operators: z.array(z.enum(["shell", "http", "node", "python", "noop"])).default([]),
      maxParallelism: z.number().int().min(1).max(100_000).default(16),
      config: z.record(z.string(), z.unknown()).default({}),
      /** Secrets by reference, given to every task that uses the connection. */
      secrets: secretsSchema.optional(),
    })
    .strict(),
);
export type ConnectionSpec = z.output<typeof connectionSpecSchema>;

/**
 * A connection's declaration as older logs recorded it: with a `sortOrder` that nothing ever
 * read (its free slots went to the oldest interval whatever it said). It is dropped when read:
 * the tasks' priorities now order every connection's waiters.
 */
export const storedConnectionSpecSchema = lazySchema(() =>
  connectionSpecSchema
    .extend({ sortOrder: z.enum(["logical_date", "priority"]).optional() })
    .transform(({ sortOrder: _dropped, ...spec }): ConnectionSpec => spec),
);

/**
 * A workflow param's name: a word (letters, digits, `_`, `-`, not starting with a digit or `-`),
 * so that `params.NAME` reads it and `--param NAME=VALUE` can name it.
 */
export const paramName = lazySchema(() =>
  z
    .string()
    .min(1, "must not be empty")
    .max(128, "must be at most 128 characters")
    .regex(
      /^[A-Za-z_][A-Za-z0-9_-]*$/,
      "a param name is letters, digits, _ and -, starting with a letter or _",
    ),
);

/**
 * The environment variable a shell task finds a param in: `CHRONOLOG_PARAM_` and the name
 * upper-cased, every character that is not a letter or a digit made `_` (`dry-run` ->
 * `CHRONOLOG_PARAM_DRY_RUN`).
 */
export function paramEnvName(name: string): string {
  return `CHRONOLOG_PARAM_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

export const workflowSpecSchema = lazySchema(() =>
  z
    .object({
      name: keyPart,
      project: keyPart,
      account: keyPart,
      cron: z.string().min(1).optional(),
      timezone: z.string().min(1).optional(),
      maxActiveRuns: z.number().int().min(1).default(16),
      maxActiveTasks: z.number().int().min(1).default(16),
      failurePolicy: z.enum(["skip_dependents", "fail_fast"]).default("skip_dependents"),
      config: z.record(z.string(), z.unknown()).default({}),
      /**
       * The params its tasks' templates may read as `params.NAME`, with their defaults: a scheduled
       * run has the defaults, `trigger --param NAME=VALUE` overrides declared ones.
       */
      params: z.record(paramName, z.string()).default({}),
      /** Where its alerts go (its tasks' too): a run failed, a task halted, an operator needed. */
      alerts: z.array(alertSinkSchema).default([]),
      /** Secrets by reference, given to every task of the workflow. */
      secrets: secretsSchema.optional(),
    })
    .strict(),
);
export type WorkflowSpec = z.output<typeof workflowSpecSchema>;
