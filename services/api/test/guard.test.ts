import type { AccessToken, Caller } from "@chronolog/api";
import { describe, expect, it } from "vitest";
import { Gate, loopbackHosts, StreamRegistry } from "../src/guard.js";
import { HttpProblem } from "../src/problem.js";

/** The edge's bookkeeping on its own: stream caps and revocation, the gate of as-of views, hosts. */

const caller = (name: string | null): Caller => ({
  token: name ? ({ name, scope: "read", projects: [], readProjects: [] } as unknown as AccessToken) : null,
  actor: `api:${name ?? "anonymous"}`,
});

function refusal(f: () => unknown): HttpProblem {
  try {
    f();
  } catch (error) {
    if (error instanceof HttpProblem) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("StreamRegistry", () => {
  it("caps streams per token and in all, and frees a place on release", () => {
    const r = new StreamRegistry({ perToken: 2, total: 3 });
    const a1 = r.admit(caller("a"));
    r.admit(caller("a"));
    const perToken = refusal(() => r.admit(caller("a")));
    expect(perToken.status).toBe(429);
    expect(perToken.headers["retry-after"]).toBe("5");
    expect(perToken.fields).toMatchObject({ limit: 2, open: 2 });
    r.admit(caller(null));
    expect(r.count).toBe(3);
    expect(refusal(() => r.admit(caller("b"))).message).toContain("3 streams open");
    a1.release();
    a1.release();
    expect(r.count).toBe(2);
    r.admit(caller("b"));
    expect(r.count).toBe(3);
  });

  it("closes every stream of a revoked token, and only its", () => {
    const r = new StreamRegistry({ perToken: 5, total: 10 });
    const closed: string[] = [];
    const a1 = r.admit(caller("a"));
    a1.onRevoke(() => closed.push("a1"));
    const a2 = r.admit(caller("a"));
    const b = r.admit(caller("b"));
    b.onRevoke(() => closed.push("b"));
    r.revoke("a");
    expect(closed).toEqual(["a1"]);
    expect(a2.revoked).toBe(true);
    // A stream that registers its close after the revocation is closed at once.
    a2.onRevoke(() => closed.push("a2"));
    expect(closed).toEqual(["a1", "a2"]);
    expect(r.count).toBe(1);
    expect(b.revoked).toBe(false);
  });
});

describe("Gate", () => {
  it("runs `concurrent` jobs at once, queues `queued` more, refuses the next with 503", async () => {
    const g = new Gate(1, 2, "folds");
    const releases: Array<() => void> = [];
    const job = () => new Promise<string>((resolve) => releases.push(() => resolve("done")));
    const first = g.run(job);
    const second = g.run(job);
    const third = g.run(job);
    expect(g.active).toBe(1);
    expect(g.pending).toBe(2);
    const refused = await g.run(job).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HttpProblem);
    expect((refused as HttpProblem).status).toBe(503);
    expect((refused as HttpProblem).headers["retry-after"]).toBe("1");
    expect(releases).toHaveLength(1);
    releases[0]?.();
    expect(await first).toBe("done");
    await Promise.resolve();
    expect(releases).toHaveLength(2);
    releases[1]?.();
    await second;
    await Promise.resolve();
    releases[2]?.();
    await third;
    expect(g.active).toBe(0);
    expect(g.pending).toBe(0);
  });

  it("frees its turn when a job fails", async () => {
    const g = new Gate(1, 0, "folds");
    await expect(g.run(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(g.active).toBe(0);
    expect(await g.run(async () => 1)).toBe(1);
  });
});

describe("loopbackHosts", () => {
  it("names localhost, 127.0.0.1, [::1] and the bound address, each with the port", () => {
    expect([...loopbackHosts("127.0.0.2", 8080)].sort()).toEqual([
      "127.0.0.1:8080",
      "127.0.0.2:8080",
      "[::1]:8080",
      "localhost:8080",
    ]);
  });
});
