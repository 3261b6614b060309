import { formatTaskKey, type TaskKey } from "./keys.js";

/**
 * Stream names are `category-id`: a lower-case category, a dash, then an id of printable,
 * non-space ASCII. At most 512 characters; a leading `$` is reserved.
 */
export const STREAM_NAME_PATTERN = /^[a-z][a-z0-9_]{0,31}-[!-~]{1,480}$/;

export function isValidStreamName(name: unknown): name is string {
  return typeof name === "string" && STREAM_NAME_PATTERN.test(name);
}

export function streamCategory(name: string): string {
  const dash = name.indexOf("-");
  return dash < 0 ? name : name.slice(0, dash);
}

/** One stream per task: its declaration and its schedule position. */
export function taskStream(key: TaskKey): string {
  return `task-${formatTaskKey(key)}`;
}

/** One stream per task instance (task x logical date): its attempts and their outcomes. */
export function instanceStream(key: TaskKey, logicalDate: string): string {
  return `instance-${formatTaskKey(key)}@${logicalDate}`;
}

/** One stream per workflow run (workflow x logical date). */
export function runStream(runId: string): string {
  return `run-${runId}`;
}

export function connectionStream(name: string): string {
  return `connection-${name}`;
}

export function workflowStream(name: string): string {
  return `workflow-${name}`;
}

/** One stream per alert: `alert-<kind>:<subject>` (a task's interval, or a run). */
export function alertStream(alertId: string): string {
  return `alert-${alertId}`;
}

/** One stream per remote worker: `worker-<id>`, its connections and disconnections. */
export function workerStream(workerId: string): string {
  return `worker-${workerId}`;
}

/** The one stream of the HTTP API's access tokens: issued and revoked, in order. */
export const ACCESS_TOKEN_STREAM = "access-tokens";
