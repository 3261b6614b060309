import { ValidationError } from "@chronolog/core";
import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HttpProblem } from "../problem.js";

/** A JSON response of the OpenAPI document: its schema and what it is. */
export const json = (schema: z.ZodType, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A JSON body already serialised (bigints as strings), for a route that declares its schema. */
export const jsonText = (c: Context, text: string) =>
  c.body(text, 200, { "content-type": "application/json" }) as never;

/** An optional JSON body of the OpenAPI document, validated by `optionalJson` in the handler. */
export const optionalBody = (schema: z.ZodType) => ({
  required: false,
  content: { "application/json": { schema } },
});

/** Refuses a body that is not application/json (415), naming the type it has. */
export function requireJson(contentType: string | undefined): void {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json")
    throw new HttpProblem(
      415,
      "unsupported_media_type",
      `this body is application/json, not ${type || "untyped"}`,
    );
}

/** A JSON body that may be absent (an empty object then), checked against `schema`. */
export async function optionalJson<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const text = await c.req.text();
  if (text.trim() === "") return schema.parse({});
  requireJson(c.req.header("content-type"));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError("body", [{ path: "", message: `not valid JSON: ${(error as Error).message}` }]);
  }
  const r = schema.safeParse(value);
  if (!r.success)
    throw new ValidationError(
      "body",
      r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    );
  return r.data;
}
