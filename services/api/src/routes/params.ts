import { formatTaskKey, parseTaskKey, ValidationError } from "@chronolog/core";
import { z } from "@hono/zod-openapi";

/** `{key}`: a task key in a path. */
export const taskKeyParam = z.object({
  key: z.string().openapi({
    description: "the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F)",
    example: "sales%2Facme%2Forders_enriched%2FALL",
  }),
});

/** `{id}`: a run id in a path. */
export const runIdParam = z.object({
  id: z.string().openapi({
    description: "run id `WORKFLOW@LOGICAL_DATE`, URL-encoded",
    example: "etl@2026-11-30T02:00Z",
  }),
});

/** The task id a key names, in its one written form; a key that is not one is refused (400). */
export function taskIdOf(text: string): string {
  const parsed = parseTaskKey(text);
  if (!parsed.ok) throw new ValidationError("key", [{ path: "", message: parsed.error }]);
  return formatTaskKey(parsed.key);
}

/** The project a task id is in: its first part. */
export const projectOf = (taskId: string): string => taskId.split("/")[0] as string;
