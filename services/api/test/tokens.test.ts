import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { issueToken, readTokens, revokeToken } from "@chronolog/api/tokens";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/** The access tokens on their own: issued, checked, listed and revoked, on an embedded log. */

let dir: string;
let log: EventLog;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-tokens-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test", synchronous: "NORMAL" });
});
afterEach(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("access tokens", () => {
  it("a token issued is checked by its secret; the log keeps only its hash", async () => {
    const r = await issueToken(log, { name: "ci", scope: "declare", projects: ["sales", "sales"] });
    expect(r.token).toMatch(/^chl\.ci\.[0-9a-f]{64}$/);
    expect(r.record).toMatchObject({ name: "ci", scope: "declare", projects: ["sales"], revokedAt: null });
    const book = await readTokens(log);
    const checked = book.check(r.token);
    expect(checked.ok && checked.token.name).toBe("ci");
    const events = await log.readAll({ fromPosition: 0n, maxCount: 100 });
    expect(JSON.stringify(events.map((e) => e.data))).not.toContain(r.token.split(".")[2]);
  });

  it("a wrong secret, an unknown name and a malformed token are one answer", async () => {
    const r = await issueToken(log, { name: "ci", scope: "read" });
    const book = await readTokens(log);
    const wrong = `chl.ci.${"0".repeat(64)}`;
    for (const presented of [wrong, `chl.nobody.${"1".repeat(64)}`, "not a token", r.token.slice(0, -1)])
      expect(book.check(presented)).toEqual({ ok: false, why: "unknown" });
  });

  it("a revoked token is refused as revoked; its name can then be issued again", async () => {
    const first = await issueToken(log, { name: "ci", scope: "admin" });
    await expect(issueToken(log, { name: "ci", scope: "read" })).rejects.toThrow(/exists/);
    await revokeToken(log, "ci", "rotated");
    expect((await readTokens(log)).check(first.token)).toEqual({ ok: false, why: "revoked" });
    await expect(revokeToken(log, "ci")).rejects.toThrow(/was revoked/);
    const second = await issueToken(log, { name: "ci", scope: "read" });
    const book = await readTokens(log);
    expect(book.check(second.token).ok).toBe(true);
    expect(book.list().map((t) => [t.name, t.scope, t.revokedAt])).toEqual([["ci", "read", null]]);
  });

  it("refuses a bad name, a bad scope and an unknown token to revoke", async () => {
    await expect(issueToken(log, { name: "Not Valid", scope: "read" })).rejects.toThrow();
    await expect(issueToken(log, { name: "ci", scope: "everything" })).rejects.toThrow();
    await expect(revokeToken(log, "nobody")).rejects.toThrow(/no token named nobody/);
  });
});
