import {
  dataInterval,
  type OperatorSpec,
  runIdOf,
  type SchedulerProjection,
  type TaskState,
} from "@chronolog/core";
import { renderOperator, renderTemplate, taskEnvironment } from "@chronolog/render";

/**
 * A task's payload for its current interval: its operator with every template rendered against
 * the interval's context (dates, config, the run's params), and its cache key. The scheduler
 * renders before it writes an intent; `why` renders the same way to say whether it would fail.
 */

/** The operator with its templates rendered (most have none: no context is built then). */
export function renderPayload(task: TaskState, projection: SchedulerProjection): OperatorSpec {
  if (task.spec.operator.type === "noop" || !hasTemplate(task.spec.operator)) return task.spec.operator;
  return renderOperator(task.spec.operator, renderContext(task, projection));
}

/**
 * The environment a shell or python task is given for its current interval (none for other
 * operators): every param and builtin its templates could read (`taskEnvironment`:
 * `CHRONOLOG_PARAM_NOTE`, `CHRONOLOG_DS`...), and, in a workflow, `CHRONOLOG_WORKFLOW` and
 * `CHRONOLOG_RUN_ID`. A python task also gets its params and config whole, as JSON
 * (`CHRONOLOG_PARAMS`, `CHRONOLOG_CONFIG`: the context a Python worker gives the function). Sent
 * to the worker with the attempt, not written to the log.
 */
export function renderEnvironment(
  task: TaskState,
  projection: SchedulerProjection,
): Record<string, string> | undefined {
  const type = task.spec.operator.type;
  if (type !== "shell" && type !== "python") return undefined;
  const context = renderContext(task, projection);
  const env = taskEnvironment(context);
  if (type === "python") {
    env.CHRONOLOG_PARAMS = JSON.stringify(context.params);
    env.CHRONOLOG_CONFIG = JSON.stringify(context.config ?? {});
  }
  if (task.spec.workflow) {
    env.CHRONOLOG_WORKFLOW = task.spec.workflow;
    env.CHRONOLOG_RUN_ID = runIdOf(task.spec.workflow, task.logicalDate);
  }
  return env;
}

/** The task's cache key for its current interval, when it declares one. */
export function renderCacheKey(task: TaskState, projection: SchedulerProjection): string | undefined {
  if (task.spec.cacheKey === undefined) return undefined;
  return renderTemplate(task.spec.cacheKey, renderContext(task, projection), "cacheKey");
}

/** Why the task's payload, cache key or environment cannot be made, or undefined when all can. */
export function renderProblem(projection: SchedulerProjection): (task: TaskState) => string | undefined {
  return (task) => {
    try {
      renderPayload(task, projection);
      renderCacheKey(task, projection);
      renderEnvironment(task, projection);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };
}

function renderContext(task: TaskState, projection: SchedulerProjection) {
  const interval = dataInterval(task.logicalDate, task.spec.cron, task.spec.timezone);
  return {
    task: task.key,
    logicalDate: task.logicalDate,
    dataIntervalStart: interval.start,
    dataIntervalEnd: interval.end,
    prevIntervalStart: task.prevIntervalStart,
    timezone: task.spec.timezone,
    config: task.spec.config,
    secrets: Object.keys(task.spec.secrets ?? {}),
    // The run's params over the workflow's defaults (a run started before a param was declared
    // sees its default).
    params: task.spec.workflow
      ? {
          ...(projection.workflows.get(task.spec.workflow)?.params ?? {}),
          ...(projection.runs.get(runIdOf(task.spec.workflow, task.logicalDate))?.params ?? {}),
        }
      : {},
  };
}

function hasTemplate(value: unknown): boolean {
  if (typeof value === "string") return value.includes("{{") || value.includes("{%");
  if (Array.isArray(value)) return value.some(hasTemplate);
  if (value && typeof value === "object") return Object.values(value).some(hasTemplate);
  return false;
}
