import { createHash, timingSafeEqual } from "node:crypto";
import { ACCESS_TOKEN_STREAM, type EventSchemas } from "@chronolog/core";
import type { EventLog, RecordedEvent } from "@chronolog/log";

export type AccessScope = (typeof EventSchemas.ACCESS_SCOPES)[number];

/** A token as the log knows it: never its secret, only the secret's SHA-256. */
export interface AccessToken {
  readonly name: string;
  readonly scope: AccessScope;
  /** The projects it may declare or operate on; empty: every project. */
  readonly projects: readonly string[];
  /** The projects it may read; empty: every project. */
  readonly readProjects: readonly string[];
  /** A `work` token's queues: those a worker connecting with it may serve (empty for other scopes). */
  readonly queues: readonly string[];
  readonly sha256: string;
  readonly issuedAt: string;
  readonly issuedBy: string;
  /** When it was revoked, if it was. */
  readonly revokedAt: string | null;
}

/** `chl.<name>.<64 hex digits>`: the name says which record to check, the secret is the proof. */
const TOKEN_PATTERN = /^chl\.([a-z0-9][a-z0-9_-]{0,63})\.([0-9a-f]{64})$/;

/** What the log keeps of a token: the SHA-256 of the whole of it, in hex. */
export const sha256Of = (text: string) => createHash("sha256").update(text).digest("hex");

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
        readProjects: e.data.readProjects ?? [],
        queues: e.data.queues ?? [],
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
