import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronologAsync } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { SseClient } from "./events-support.js";
import {
  type ApiAnswer,
  type ApiProcess,
  chronolog,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  headOf,
  key,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * Tenants apart: every write checks every project it touches (a backfill's whole plan, a rerun
 * of a run the projection has forgotten, trigger, pause, resume, retire), a revoked token's
 * streams end at once, and a token limited to some projects' reads sees only them. One data
 * directory: `serve --writable` first (a log that moves only when the test writes), then `up`
 * until a thousand runs have pushed an alpha run out of memory, then `serve` again.
 */

const BETA_WORKFLOWS = 10;
const BETA_MINUTES = 110;

function minutesAgo(n: number): string {
  const d = new Date(Date.now() - n * 60_000);
  d.setUTCSeconds(0, 0);
  return d.toISOString();
}

const DECLARATION = `
workflows:
  - name: alpha_daily
    project: alpha
    account: acme
    cron: "0 2 * * *"
    startDate: "${dayAt(-2)}"
    tasks:
      - name: a
        operator: { type: noop }
${Array.from(
  { length: BETA_WORKFLOWS },
  (_, i) => `  - name: beta_many${i}
    project: beta
    account: acme
    cron: "* * * * *"
    startDate: "${minutesAgo(BETA_MINUTES)}"
    tasks:
      - name: tick${i}
        operator: { type: noop }
`,
).join("")}
tasks:
  - project: beta
    account: acme
    name: b
    cron: "0 2 * * *"
    startDate: "${dayAt(-2)}"
    parents: ["alpha/acme/a"]
    operator: { type: noop }
  - project: alpha
    account: acme
    name: slow
    cron: "0 0 * * *"
    startDate: "${dayAt(-1)}"
    operator: { type: shell, command: "echo started; sleep 600" }
`;

const left = new Leftovers();
let dir: string;
let server: ApiProcess;
let call: ReturnType<typeof client>;
const t: Record<string, string> = {};

function problem(r: ApiAnswer, status: number, detail?: string | RegExp): void {
  expect(r.status, r.text).toBe(status);
  expect(r.type).toContain("application/problem+json");
  if (detail !== undefined)
    if (typeof detail === "string") expect(r.body.detail).toContain(detail);
    else expect(r.body.detail).toMatch(detail);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

/** The log's events from `from` on, as the CLI reads them. */
function eventsFrom(from: bigint): Array<{ type: string; streamId: string; metadata: { actor: string } }> {
  const r = chronolog(dir, ["log", "read", "--from", String(from), "--limit", "100000", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
}

beforeAll(async () => {
  dir = dataDir(left, "tenancy");
  declareFile(dir, DECLARATION);
  t.admin = createToken(dir, "admin", "admin");
  t.alphaop = createToken(dir, "alphaop", "operate", ["alpha"]);
  t.betaop = createToken(dir, "betaop", "operate", ["beta"]);
  t.watcher = createToken(dir, "watcher", "read");
  const r = chronolog(dir, ["token", "create", "alpharead", "--scope", "read", "--read-projects", "alpha"]);
  expect(r.code, r.stderr).toBe(0);
  t.alpharead = r.stdout.trim();
  server = await startApi(left, dir, ["serve", "--writable"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("a write checks every project it touches", () => {
  it("a downstream backfill whose plan reaches beta is refused for an alpha token, naming beta; nothing written", async () => {
    const before = await headOf(server, t.admin as string);
    const body = { task: "alpha/acme/a", from: dayAt(-2), to: dayAt(-1), downstream: true };
    problem(
      await call("/backfills", { token: t.alphaop, body }),
      403,
      "token alphaop is limited to alpha: it cannot backfill in project beta",
    );
    const refused = await call("/backfills", { token: t.alphaop, body });
    expect(refused.body.outside).toEqual(["beta"]);
    // A direct backfill of beta: refused as before.
    problem(
      await call("/backfills", {
        token: t.alphaop,
        body: { ...body, task: "beta/acme/b", downstream: false },
      }),
      403,
      "project beta",
    );
    expect(await headOf(server, t.admin as string)).toBe(before);
    expect(eventsFrom(BigInt(before) + 1n)).toEqual([]);
  });

  it("trigger, pause, resume and retire of another project are refused (403); nothing written", async () => {
    const before = await headOf(server, t.admin as string);
    problem(
      await call("/workflows/alpha_daily/runs", { token: t.betaop, method: "POST" }),
      403,
      "token betaop is limited to beta: it cannot trigger workflows in project alpha",
    );
    for (const action of ["pause", "resume", "retire"])
      problem(
        await call(`/tasks/${key("alpha/acme/a")}/${action}`, { token: t.betaop, method: "POST" }),
        403,
        `it cannot ${action} in project alpha`,
      );
    problem(
      await call("/runs/alpha_daily@2026-01-01T02:00:00Z/rerun", { token: t.betaop, method: "POST" }),
      404,
    );
    expect(await headOf(server, t.admin as string)).toBe(before);
  });

  it("a downstream backfill by an admin token plans beta too (the case above is real)", async () => {
    const r = await call("/backfills", {
      token: t.admin,
      body: { task: "alpha/acme/a", from: dayAt(-2), to: dayAt(-1), downstream: true },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.targets.map((x: { task: string }) => x.task).sort()).toEqual([
      "alpha/acme/a/ALL",
      "beta/acme/b/ALL",
    ]);
  });
});

describe("reads limited to projects (token create --read-projects)", () => {
  it("lists only the readable projects' tasks and workflows, and refuses another's (403)", async () => {
    const tasks = await call("/tasks?limit=1000", { token: t.alpharead });
    expect(tasks.status, tasks.text).toBe(200);
    expect(tasks.body.items.map((x: { task: string }) => x.task)).toEqual([
      "alpha/acme/a/ALL",
      "alpha/acme/slow/ALL",
    ]);
    const workflows = await call("/workflows", { token: t.alpharead });
    expect(workflows.body.map((w: { name: string }) => w.name)).toEqual(["alpha_daily"]);
    problem(
      await call(`/tasks/${key("beta/acme/b")}`, { token: t.alpharead }),
      403,
      "token alpharead may read only alpha: not a task in project beta",
    );
    problem(await call(`/tasks/${key("beta/acme/b")}/history`, { token: t.alpharead }), 403);
    problem(await call(`/tasks/${key("beta/acme/b")}/attempts`, { token: t.alpharead }), 403);
    problem(await call("/runs?workflow=beta_many0", { token: t.alpharead }), 403);
    // Refused before it would wait for the run (a long poll tells nothing of another project).
    problem(
      await call(`/runs/${encodeURIComponent("beta_many0@2026-01-01T00:00:00Z")}?wait=60s`, {
        token: t.alpharead,
      }),
      403,
      "not a run in project beta",
    );
    expect((await call(`/tasks/${key("alpha/acme/a")}/history`, { token: t.alpharead })).status).toBe(200);
    // The log: alpha's events only (a task's, a workflow's), none of beta's or the tokens'.
    const log = await call("/log?from=0&limit=10000", { token: t.alpharead });
    expect(log.status).toBe(200);
    const streams = new Set(log.body.events.map((e: { streamId: string }) => e.streamId));
    expect([...streams].sort()).toEqual([
      "task-alpha/acme/a/ALL",
      "task-alpha/acme/slow/ALL",
      "workflow-alpha_daily",
    ]);
    const all = await call("/log?from=0&limit=10000", { token: t.admin });
    expect(all.body.events.length).toBeGreaterThan(log.body.events.length);
  });

  it("hears only the readable projects' live events", async () => {
    const sse = new SseClient(`${server.url}/api/v1/events`, { authorization: `Bearer ${t.alpharead}` });
    expect(await sse.opened).toBe(200);
    for (const task of ["beta/acme/b", "alpha/acme/a"]) {
      const r = await call(`/tasks/${key(task)}/pause`, { token: t.admin, method: "POST" });
      expect(r.status, r.text).toBe(200);
    }
    await sse.until(() => sse.frames.some((f) => f.event === "TaskPaused"), 20_000, "alpha's TaskPaused");
    const paused = sse.frames.filter((f) => f.event === "TaskPaused").map((f) => JSON.parse(f.data).streamId);
    expect(paused).toEqual(["task-alpha/acme/a/ALL"]);
    sse.close();
    for (const task of ["beta/acme/b", "alpha/acme/a"])
      expect((await call(`/tasks/${key(task)}/resume`, { token: t.admin, method: "POST" })).status).toBe(200);
  });

  it("token list shows the read limit", () => {
    const r = chronolog(dir, ["token", "list", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<{ name: string; readProjects: string[] }>;
    expect(rows.find((x) => x.name === "alpharead")?.readProjects).toEqual(["alpha"]);
    expect(rows.find((x) => x.name === "admin")?.readProjects).toEqual([]);
  });
});

describe("revoking a token", () => {
  it("ends its open streams at once (header and ?access_token=), before the revocation reaches them", async () => {
    const url = `${server.url}/api/v1/events`;
    const byHeader = new SseClient(url, { authorization: `Bearer ${t.watcher}` });
    const byQuery = new SseClient(`${url}?access_token=${t.watcher}`);
    const other = new SseClient(url, { authorization: `Bearer ${t.admin}` });
    for (const s of [byHeader, byQuery, other]) expect(await s.opened).toBe(200);
    const note = await call(`/tasks/${key("alpha/acme/a")}/pause`, { token: t.admin, method: "POST" });
    expect(note.status).toBe(200);
    for (const s of [byHeader, byQuery, other])
      await s.until(() => s.frames.some((f) => f.event === "TaskPaused"), 20_000, "TaskPaused");
    const r = chronolog(dir, ["token", "revoke", "watcher", "--reason", "leaked"]);
    expect(r.code, r.stderr).toBe(0);
    await byHeader.until(() => byHeader.ended, 20_000, "the header stream's end");
    await byQuery.until(() => byQuery.ended, 20_000, "the query stream's end");
    // The other token's stream hears the revocation; the revoked ones never do.
    await other.until(() => other.frames.some((f) => f.event === "AccessTokenRevoked"), 20_000, "revocation");
    expect(other.ended).toBe(false);
    for (const s of [byHeader, byQuery]) {
      expect(s.frames.map((f) => f.event)).not.toContain("AccessTokenRevoked");
    }
    other.close();
    problem(await call("/events", { token: t.watcher }), 401, "revoked");
    expect(
      (await call(`/tasks/${key("alpha/acme/a")}/resume`, { token: t.admin, method: "POST" })).status,
    ).toBe(200);
  });
});

describe("a rerun of a run the projection no longer holds", () => {
  it("is checked like one in memory: a beta token is refused before and after 1,000 runs pushed it out", async () => {
    await stop(server.child);
    server = await startApi(left, dir, ["up", "--workers", "1", "--reconcile-ms", "100", "--grace", "0"]);
    call = client(server);
    // Beside a scheduler too (the API reads its projection), a revocation ends the token's stream.
    // Beside a running `up`, the CLI runs without blocking the test (which reads up's output).
    const cli = async (args: string[]) => {
      const r = await chronologAsync(dir, args);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.trim();
    };
    const watcher = await cli(["token", "create", "watcher2", "--scope", "read"]);
    const stream = new SseClient(`${server.url}/api/v1/events?access_token=${watcher}`);
    expect(await stream.opened).toBe(200);
    await cli(["token", "revoke", "watcher2"]);
    await stream.until(() => stream.ended, 20_000, "the revoked token's stream to end under up");
    expect(stream.frames.map((f) => f.event)).not.toContain("AccessTokenRevoked");

    // An attempt in flight: its followed output ends when the follower's token is revoked, and
    // another project's token may not abandon it.
    const attempt = await waitUntil(
      "an attempt of alpha/acme/slow to run",
      async () => {
        const r = await call(`/tasks/${key("alpha/acme/slow")}/attempts`, { token: t.admin });
        return r.body.find?.((a: { status: string }) => a.status === "running")?.token as string | undefined;
      },
      60_000,
    );
    const follower = await cli(["token", "create", "follower", "--scope", "read"]);
    const output = new SseClient(`${server.url}/api/v1/attempts/${attempt}/output?follow=true`, {
      authorization: `Bearer ${follower}`,
    });
    expect(await output.opened).toBe(200);
    await cli(["token", "revoke", "follower"]);
    await output.until(() => output.ended, 20_000, "the followed output to end");
    problem(
      await call(`/attempts/${attempt}/abandon`, { token: t.betaop, body: { reason: "not mine" } }),
      403,
      "token betaop is limited to beta: it cannot abandon attempts in project alpha",
    );
    const abandoned = await call(`/attempts/${attempt}/abandon`, { token: t.alphaop, body: {} });
    expect(abandoned.status, abandoned.text).toBe(200);
    // An alpha run that has finished.
    // The first day's run (named, not looked for in the list: the beta runs may have pushed it
    // out of the projection already), once it has finished.
    const runId = `alpha_daily@${dayAt(-2).slice(0, 10)}T02:00:00.000Z`;
    await waitUntil(
      `${runId} to finish`,
      async () => {
        const run = await call(`/runs/${encodeURIComponent(runId)}`, { token: t.admin });
        return run.status === 200 && run.body.run.status !== "running" ? true : undefined;
      },
      60_000,
    );
    const path = `/runs/${encodeURIComponent(runId)}/rerun`;
    problem(
      await call(path, { token: t.betaop, method: "POST" }),
      403,
      "token betaop is limited to beta: it cannot rerun runs in project alpha",
    );
    // Until a thousand runs finished after it: the projection then no longer holds it.
    await waitUntil(
      "a thousand runs to finish after it (the projection then no longer holds it)",
      async () => {
        const runs = await call("/runs?workflow=alpha_daily", { token: t.admin });
        return runs.body.some((r: { runId: string }) => r.runId === runId) ? undefined : true;
      },
      300_000,
      500,
    );
    await stop(server.child);
    server = await startApi(left, dir, ["serve", "--writable"]);
    call = client(server);
    const listed = await call("/runs?workflow=alpha_daily", { token: t.admin });
    expect(listed.body.map((r: { runId: string }) => r.runId)).not.toContain(runId);
    const described = await call(`/runs/${encodeURIComponent(runId)}`, { token: t.admin });
    expect(described.status, described.text).toBe(200);

    const before = await headOf(server, t.admin as string);
    problem(
      await call(path, { token: t.betaop, method: "POST" }),
      403,
      "token betaop is limited to beta: it cannot rerun runs in project alpha",
    );
    expect(await headOf(server, t.admin as string)).toBe(before);
    // Its own project's token may.
    const own = await call(path, { token: t.alphaop, method: "POST" });
    expect(own.status, own.text).toBe(200);
    expect(own.body.tasks).toEqual(["alpha/acme/a/ALL"]);
    const written = eventsFrom(BigInt(before) + 1n);
    expect(written.length).toBeGreaterThan(0);
    expect(new Set(written.map((e) => e.metadata.actor))).toEqual(new Set(["api:alphaop"]));
    // The beta token, refused everywhere alpha was touched, never wrote a thing.
    const actors = new Set<string>();
    for (let from: string | null = "0"; from !== null; ) {
      const page = await call(`/log?from=${from}&limit=10000`, { token: t.admin });
      for (const e of page.body.events) actors.add(e.metadata.actor);
      from = page.body.next;
    }
    expect(actors).toContain("api:alphaop");
    expect(actors).not.toContain("api:betaop");
  }, 480_000);
});
