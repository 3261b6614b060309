import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { ACCESS_TOKEN_STREAM, EventSchemas, ValidationError, zodIssues } from "@chronolog/core";
import type { EventLog, RecordedEvent } from "@chronolog/log";
import type { z } from "zod";
import { NotFoundError, StateError } from "./errors.js";

export type AccessScope = (typeof EventSchemas.ACCESS_SCOPES)[number];

/** A token as the log knows it: never its secret, only the secret's SHA-256. */
export interface AccessToken {
  readonly name: string;
  readonly scope: AccessScope;
  /** The projects it may declare or operate on; empty: every project. */
  readonly projects: readonly string[];
  readonly sha256: string;
  readonly issuedAt: string;
  readonly issuedBy: string;
  /** When it was revoked, if it was. */
  readonly revokedAt: string | null;
}

/** `chl.<name>.<64 hex digits>`: the name says which record to check, the secret is the proof. */
const TOKEN_PATTERN = /^chl\.([a-z0-9][a-z0-9_-]{0,63})\.([0-9a-f]{64})$/;

const sha256Of = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The access tokens, folded from their stream: the latest record of each name. Fed by the
 * events of `access-tokens` in log order (read whole at start, then followed).
 */
export class TokenBook {
  private readonly tokens = new Map<string, AccessToken>();
  /** The stream's revision this book has seen, for the compare-and-set of the next write. */
  revision: bigint | "no_stream" = "no_stream";

  apply(e: RecordedEvent): void {
    if (e.streamId !== ACCESS_TOKEN_STREAM) return;
    if (typeof this.revision === "bigint" && e.revision <= this.revision) return;
    this.revision = e.revision;
    if (e.type === "AccessTokenIssued")
      this.tokens.set(e.data.name, {
        ...e.data,
        issuedAt: e.metadata.recordedAt,
        issuedBy: e.metadata.actor,
        revokedAt: null,
      });
    else if (e.type === "AccessTokenRevoked") {
      const t = this.tokens.get(e.data.name);
      if (t) this.tokens.set(t.name, { ...t, revokedAt: e.metadata.recordedAt });
    }
  }

  get(name: string): AccessToken | undefined {
    return this.tokens.get(name);
  }

  list(): AccessToken[] {
    return [...this.tokens.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Which token `presented` is. The secret's hash is compared in constant time; a malformed
   * token, an unknown name and a wrong secret are one answer, so none tells which names exist.
   */
  check(presented: string): { ok: true; token: AccessToken } | { ok: false; why: "unknown" | "revoked" } {
    const m = TOKEN_PATTERN.exec(presented);
    const t = m ? this.tokens.get(m[1] as string) : undefined;
    const expected = Buffer.from(t?.sha256 ?? "0".repeat(64), "hex");
    const actual = Buffer.from(sha256Of(presented), "hex");
    const same = timingSafeEqual(expected, actual);
    if (!t || !same) return { ok: false, why: "unknown" };
    if (t.revokedAt !== null) return { ok: false, why: "revoked" };
    return { ok: true, token: t };
  }
}

/** Reads the whole token stream into a book. */
export async function readTokens(log: EventLog): Promise<TokenBook> {
  const book = new TokenBook();
  for (const e of await log.readStream(ACCESS_TOKEN_STREAM)) book.apply(e);
  return book;
}

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
  input: { name: string; scope: string; projects?: readonly string[] },
): Promise<{ token: string; record: AccessToken; position: bigint }> {
  const data = checked(
    EventSchemas.AccessTokenIssued.omit({ sha256: true }),
    { name: input.name, scope: input.scope, projects: [...new Set(input.projects ?? [])] },
    "token",
  );
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
    record: { ...data, sha256, issuedAt: new Date().toISOString(), issuedBy: log.actor, revokedAt: null },
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
