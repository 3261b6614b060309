import { randomBytes } from "node:crypto";
import { ACCESS_TOKEN_STREAM, EventSchemas, ValidationError, zodIssues } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { NotFoundError, StateError } from "@chronolog/scheduler";
import type { z } from "@hono/zod-openapi";
import { type AccessToken, readTokens, sha256Of } from "./book.js";

function checked<T>(schema: z.ZodType<T>, value: unknown, subject: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new ValidationError(subject, zodIssues(r.error));
  return r.data;
}

/**
 * Issues a token: records its name, scope, projects and the SHA-256 of its secret, and returns
 * the token itself, which is never stored and cannot be shown again. A name in use (issued and
 * not revoked) is refused.
 */
export async function issueToken(
  log: EventLog,
  input: {
    name: string;
    scope: string;
    projects?: readonly string[];
    readProjects?: readonly string[];
    /** A work token's queues (required for one, refused for any other scope). */
    queues?: readonly string[];
  },
): Promise<{ token: string; record: AccessToken; position: bigint }> {
  const data = checked(
    EventSchemas.AccessTokenIssued.omit({ sha256: true }),
    {
      name: input.name,
      scope: input.scope,
      projects: [...new Set(input.projects ?? [])],
      ...(input.readProjects?.length ? { readProjects: [...new Set(input.readProjects)] } : {}),
      ...(input.queues?.length ? { queues: [...new Set(input.queues)] } : {}),
    },
    "token",
  );
  if (data.scope === "work" && !data.queues)
    throw new ValidationError("token", [
      { path: "queues", message: "a work token names the queues it may serve (--queue NAME)" },
    ]);
  if (data.scope === "work" && (data.projects.length > 0 || data.readProjects))
    throw new ValidationError("token", [
      {
        path: "projects",
        message: "a work token serves queues, whose attempts are of every project: it is limited to none",
      },
    ]);
  if (data.scope !== "work" && data.queues)
    throw new ValidationError("token", [
      { path: "queues", message: `only a work token names queues, not one of scope ${data.scope}` },
    ]);
  const book = await readTokens(log);
  const existing = book.get(data.name);
  if (existing && existing.revokedAt === null)
    throw new StateError(`a token named ${data.name} exists (issued ${existing.issuedAt}): revoke it first`);
  const token = `chl.${data.name}.${randomBytes(32).toString("hex")}`;
  const sha256 = sha256Of(token);
  const r = await log.append(
    ACCESS_TOKEN_STREAM,
    [{ type: "AccessTokenIssued", data: { ...data, sha256 } }],
    {
      expectedRevision: book.revision,
    },
  );
  return {
    token,
    position: r.position,
    record: {
      ...data,
      readProjects: data.readProjects ?? [],
      queues: data.queues ?? [],
      sha256,
      issuedAt: new Date().toISOString(),
      issuedBy: log.actor,
      revokedAt: null,
    },
  };
}

/** Revokes a token: it is refused from the next request on. */
export async function revokeToken(log: EventLog, name: string, reason?: string): Promise<bigint> {
  const book = await readTokens(log);
  const t = book.get(name);
  if (!t) throw new NotFoundError(`no token named ${name}`);
  if (t.revokedAt !== null) throw new StateError(`token ${name} was revoked at ${t.revokedAt}`);
  const r = await log.append(
    ACCESS_TOKEN_STREAM,
    [{ type: "AccessTokenRevoked", data: reason ? { name, reason } : { name } }],
    { expectedRevision: book.revision },
  );
  return r.position;
}
