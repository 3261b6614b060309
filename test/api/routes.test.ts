import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import {
  type ApiAnswer,
  type ApiProcess,
  chronolog,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  key,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * Every route of the API, against one `chronolog up` serving it on an ephemeral port: a
 * workflow that runs at start, one that fails, standalone tasks to pause, retire and backfill,
 * one that sleeps between lines (output followed live) and one that sleeps long (abandoned).
 */

const HOUR = 3_600_000;
const hour = Math.floor(Date.now() / HOUR) * HOUR;
const hoursAgo = (n: number) => new Date(hour - n * HOUR).toISOString();
const oneHourAfter = (iso: string) => new Date(Date.parse(iso) + HOUR).toISOString();

const DECLARATION = `
workflows:
  - name: etl
    project: sales
    account: acme
    cron: "0 2 * * *"
    startDate: "${dayAt(-2)}"
    params: { mode: full }
    tasks:
      - name: extract
        operator: { type: shell, command: "echo extract {{ params.mode }}" }
        idempotent: true
      - name: load
        parents: [extract]
        operator: { type: shell, command: "echo load" }
        idempotent: true
  - name: flaky
    project: sales
    account: acme
    cron: "0 3 * * *"
    # One interval, over at any hour: from 03:00 two days ago to 03:00 yesterday.
    startDate: "${dayAt(-2)}"
    endDate: "${dayAt(-1)}"
    tasks:
      - name: fine
        operator: { type: shell, command: "echo fine" }
        idempotent: true
      - name: broken
        parents: [fine]
        operator: { type: shell, command: "echo failing; exit 3" }
        retry: { maxAttempts: 1 }
        idempotent: true
tasks:
  - { project: ingest, account: acme, name: raw, cron: "0 * * * *", startDate: "${hoursAgo(4)}", endDate: "${hoursAgo(1)}", idempotent: true, operator: { type: noop } }
  - { project: ingest, account: acme, name: hold, cron: "0 0 1 1 *", startDate: "${dayAt(30)}", operator: { type: noop } }
  - { project: ingest, account: acme, name: old, cron: "0 0 1 1 *", startDate: "${dayAt(30)}", operator: { type: noop } }
`;

/** Every route the app serves, as the OpenAPI document names it. */
const ROUTES = [
  "GET /api/v1/healthz",
  "GET /api/v1/readyz",
  "GET /api/v1/metrics",
  "GET /metrics",
  "POST /api/v1/declarations",
  "GET /api/v1/connections",
  "GET /api/v1/workflows",
  "POST /api/v1/workflows/{name}/retire",
  "GET /api/v1/tasks",
  "GET /api/v1/tasks/{key}",
  "POST /api/v1/tasks/{key}/pause",
  "POST /api/v1/tasks/{key}/resume",
  "POST /api/v1/tasks/{key}/retire",
  "POST /api/v1/tasks/{key}/retry",
  "POST /api/v1/tasks/{key}/intervals/{date}",
  "POST /api/v1/tasks/{key}/mark",
  "GET /api/v1/tasks/{key}/history",
  "GET /api/v1/tasks/{key}/attempts",
  "GET /api/v1/attempts/{token}/output",
  "POST /api/v1/attempts/{token}/abandon",
  "GET /api/v1/runs",
  "GET /api/v1/runs/{id}",
  "GET /api/v1/runs/{id}/critical-path",
  "POST /api/v1/workflows/{name}/runs",
  "POST /api/v1/runs/{id}/rerun",
  "POST /api/v1/backfills",
  "GET /api/v1/backfills/{id}",
  "POST /api/v1/backfills/{id}/cancel",
  "GET /api/v1/log",
  "GET /api/v1/log/head",
  "POST /api/v1/log/verify",
  "GET /api/v1/events",
  "GET /api/v1/workers",
  "GET /ui/whoami",
  "GET /ui/grid",
  "GET /ui/graph",
  "POST /api/v1/workers",
  "GET /api/v1/workers/{id}/commands",
  "POST /api/v1/workers/{id}/reports",
  "PUT /api/v1/workers/{id}/attempts/{token}/output",
  "DELETE /api/v1/workers/{id}",
].sort();

const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let admin: string;
let reader: string;

const ok = (r: ApiAnswer) => {
  expect(r.status, r.text).toBe(200);
  return r.body;
};

interface AttemptRow {
  token: string;
  status: string;
  stdoutTail?: string;
  logicalDate: string;
}

const attemptsOf = async (task: string): Promise<AttemptRow[]> =>
  ok(await call(`/tasks/${key(task)}/attempts`, { token: reader }));

beforeAll(async () => {
  const dir = dataDir(left, "routes");
  declareFile(dir, DECLARATION);
  admin = createToken(dir, "admin", "admin");
  reader = createToken(dir, "reader", "read");
  server = await startApi(left, dir, ["up", "--workers", "1", "--reconcile-ms", "200"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("the HTTP API, route by route", () => {
  it("healthz and readyz", async () => {
    expect(ok(await call("/healthz"))).toEqual({ ok: true });
    const ready = await waitUntil("readyz", async () => {
      const r = await call("/readyz");
      return r.status === 200 ? r.body : undefined;
    });
    expect(ready.ready).toBe(true);
    expect(ready.position).toMatch(/^\d+$/);
  });

  it("connections and workflows", async () => {
    expect(ok(await call("/connections", { token: reader }))).toEqual([]);
    const wfs = ok(await call("/workflows", { token: reader })) as Array<{ name: string; project: string }>;
    expect(wfs.map((w) => w.name).sort()).toEqual(["etl", "flaky"]);
    expect(wfs.find((w) => w.name === "etl")?.project).toBe("sales");
  });

  it("runs: the scheduled ones finish; ?wait=30s returns once a run is over", async () => {
    const runs = await waitUntil("the scheduled etl runs", async () => {
      const r = ok(await call("/runs?workflow=etl", { token: reader })) as Array<{ runId: string }>;
      return r.length > 0 ? r : undefined;
    });
    const id = runs[0]?.runId as string;
    const view = ok(await call(`/runs/${encodeURIComponent(id)}?wait=30s`, { token: reader }));
    expect(view.run.runId).toBe(id);
    expect(view.run.status).toBe("success");
    expect(view.instances.map((i: { task: string }) => i.task).sort()).toEqual([
      "sales/acme/extract/ALL",
      "sales/acme/load/ALL",
    ]);
    expect(view.blockedBy).toEqual([]);
    const path = ok(await call(`/runs/${encodeURIComponent(id)}/critical-path`, { token: reader }));
    expect(path.links.map((l: { task: string }) => l.task)).toEqual([
      "sales/acme/extract/ALL",
      "sales/acme/load/ALL",
    ]);
    expect(path.pathMs).toBeGreaterThanOrEqual(0);
    const unknown = await call(`/runs/${encodeURIComponent("nope@2026-01-01")}`, { token: reader });
    expect(unknown.status).toBe(404);
    expect((await call("/runs?workflow=nope", { token: reader })).status).toBe(404);
  });

  it("POST /workflows/{name}/runs with params, then waits for the run", async () => {
    // The latest etl run has ended by now (the test above waited for one): trigger it again.
    await waitUntil("every etl run to end", async () => {
      const r = ok(await call("/runs?workflow=etl", { token: reader })) as Array<{ status: string }>;
      return r.every((x) => x.status !== "running") ? true : undefined;
    });
    const started = ok(
      await call("/workflows/etl/runs", { token: admin, body: { params: { mode: "quick" } } }),
    );
    expect(started.runId).toMatch(/^etl@/);
    expect(started.tasks).toContain("sales/acme/extract/ALL");
    const view = ok(await call(`/runs/${encodeURIComponent(started.runId)}?wait=30s`, { token: reader }));
    expect(view.run.status).toBe("success");
    expect(view.run.params).toEqual({ mode: "quick" });
    expect(view.run.trigger).toBe("manual");
    const attempts = await attemptsOf("sales/acme/extract/ALL");
    expect(attempts.some((a) => a.stdoutTail === "extract quick\n")).toBe(true);
    const refused = await call("/workflows/etl/runs", { token: admin, body: { params: { nope: "x" } } });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toContain("nope");
  });

  it("rerun failedOnly reruns what failed, not what succeeded", async () => {
    const failed = await waitUntil("the flaky run to fail", async () => {
      const r = ok(await call("/runs?workflow=flaky", { token: reader })) as Array<{
        runId: string;
        status: string;
      }>;
      return r.find((x) => x.status === "failed");
    });
    const r = ok(
      await call(`/runs/${encodeURIComponent(failed.runId)}/rerun`, {
        token: admin,
        body: { failedOnly: true },
      }),
    );
    expect(r.runId).toBe(failed.runId);
    expect(r.tasks).toEqual(["sales/acme/broken/ALL"]);
    const view = ok(await call(`/runs/${encodeURIComponent(failed.runId)}?wait=30s`, { token: reader }));
    expect(view.run.try).toBe(2);
    expect(view.run.status).toBe("failed");
    expect(view.tries.map((t: { trigger: string }) => t.trigger)).toEqual(["schedule", "rerun"]);
  });

  it("tasks: a page at a time with `next`, and the filters", async () => {
    const all = ok(await call("/tasks?limit=1000", { token: reader }));
    const ids = (all.items as Array<{ task: string }>).map((t) => t.task);
    expect(ids).toEqual([...ids].sort());
    expect(ids.length).toBe(7);
    expect(all.next).toBeNull();
    const paged: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : "";
      const page = ok(await call(`/tasks?limit=2${q}`, { token: reader }));
      paged.push(...page.items.map((t: { task: string }) => t.task));
      cursor = page.next;
      pages += 1;
    } while (cursor);
    expect(paged).toEqual(ids);
    expect(pages).toBe(4);
    const ingest = ok(await call("/tasks?project=ingest", { token: reader }));
    expect(ingest.items.map((t: { task: string }) => t.task)).toEqual([
      "ingest/acme/hold/ALL",
      "ingest/acme/old/ALL",
      "ingest/acme/raw/ALL",
    ]);
    const notDue = ok(await call("/tasks?project=ingest&condition=not_due", { token: reader }));
    expect(notDue.items.map((t: { task: string }) => t.task)).toEqual([
      "ingest/acme/hold/ALL",
      "ingest/acme/old/ALL",
    ]);
    expect(notDue.items[0].reasons[0]).toContain("is not due until");
    expect(ok(await call("/tasks?status=paused", { token: reader })).items).toEqual([]);
    const bad = await call("/tasks?status=sleeping", { token: reader });
    expect(bad.status).toBe(400);
    expect(bad.type).toContain("application/problem+json");
  });

  it("task detail, with its reasons", async () => {
    const d = ok(await call(`/tasks/${key("ingest/acme/hold")}`, { token: reader }));
    expect(d.task.id).toBe("ingest/acme/hold/ALL");
    expect(d.task.spec.operator.type).toBe("noop");
    expect(d.condition).toBe("not_due");
    expect(d.reasons[0]).toContain("is not due until");
    expect((await call(`/tasks/${key("ingest/acme/nope")}`, { token: reader })).status).toBe(404);
    expect((await call(`/tasks/${key("not a key")}`, { token: reader })).status).toBe(400);
  });

  it("pause, resume and retire, each in the task's history with its actor", async () => {
    const hold = key("ingest/acme/hold/ALL");
    const paused = ok(await call(`/tasks/${hold}/pause`, { token: admin, body: { reason: "maintenance" } }));
    expect(paused.task).toBe("ingest/acme/hold/ALL");
    expect(paused.position).toMatch(/^\d+$/);
    const again = await call(`/tasks/${hold}/pause`, { token: admin, method: "POST" });
    expect(again.status).toBe(422);
    expect(again.body.detail).toContain("is paused, not active");
    const filtered = await waitUntil("the pause to reach the API's projection", async () => {
      const r = ok(await call("/tasks?status=paused", { token: reader }));
      return r.items.length === 1 ? r.items : undefined;
    });
    expect(filtered[0].task).toBe("ingest/acme/hold/ALL");
    expect(filtered[0].reasons.join(" ")).toContain("maintenance");
    ok(await call(`/tasks/${hold}/resume`, { token: admin, method: "POST" }));
    const retired = ok(
      await call(`/tasks/${key("ingest/acme/old")}/retire`, { token: admin, method: "POST" }),
    );
    expect(retired.task).toBe("ingest/acme/old/ALL");
    const history = ok(await call(`/tasks/${hold}/history`, { token: reader })) as Array<{
      type: string;
      position: string;
      metadata: { actor: string };
    }>;
    const types = history.map((e) => e.type);
    expect(types[0]).toBe("TaskDeclared");
    expect(types.slice(-2)).toEqual(["TaskPaused", "TaskResumed"]);
    expect(history.at(-2)?.position).toBe(paused.position);
    for (const e of history.slice(-2)) expect(e.metadata.actor).toBe("api:admin");
    await waitUntil("the retirement to show", async () => {
      const r = ok(await call("/tasks?status=retired", { token: reader }));
      return r.items.length === 1 ? true : undefined;
    });
  });

  it("attempts and their output: whole, checked, and followed live", async () => {
    const talker = "ingest/acme/talker/ALL";
    const declared = ok(
      await call("/declarations", {
        token: admin,
        type: "application/yaml",
        body: `tasks:
  - project: ingest
    account: acme
    name: talker
    cron: "0 0 * * *"
    startDate: "${dayAt(-1)}"
    endDate: "${oneHourAfter(dayAt(-1))}"
    idempotent: true
    operator: { type: shell, command: "echo one; sleep 1; echo two; sleep 1; echo three" }
`,
      }),
    );
    expect(declared.tasks).toEqual([{ task: talker, outcome: "declared", changes: [] }]);
    const running = await waitUntil(
      "the talker to start",
      async () => (await attemptsOf(talker)).find((a) => a.status === "running"),
      20_000,
      50,
    );
    const started = Date.now();
    const res = await fetch(`${server.url}/api/v1/attempts/${running.token}/output?follow=true`, {
      headers: { authorization: `Bearer ${reader}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("chronolog-output-check")).toBe("running");
    const pieces: Array<{ at: number; text: string }> = [];
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
      pieces.push({ at: Date.now() - started, text: decoder.decode(chunk) });
    const whole = pieces.map((p) => p.text).join("");
    expect(whole).toBe("one\ntwo\nthree\n");
    // It came in pieces, over the seconds the attempt slept, not all at the end.
    expect(pieces.length).toBeGreaterThan(1);
    expect((pieces.at(-1)?.at ?? 0) - (pieces[0]?.at ?? 0)).toBeGreaterThan(700);
    const ended = await attemptsOf(talker);
    expect(ended.find((a) => a.token === running.token)?.status).toBe("success");
    const plain = await call(`/attempts/${running.token}/output`, { token: reader });
    expect(plain.status).toBe(200);
    expect(plain.text).toBe("one\ntwo\nthree\n");
    expect(plain.headers.get("chronolog-output-check")).toBe("ok");
    expect(plain.headers.get("chronolog-attempt-status")).toBe("success");
    expect((await call("/attempts/no-such-token/output", { token: reader })).status).toBe(404);
  }, 30_000);

  it("abandon an attempt in flight", async () => {
    const sleeper = "ingest/acme/sleeper/ALL";
    ok(
      await call("/declarations", {
        token: admin,
        body: {
          tasks: [
            {
              project: "ingest",
              account: "acme",
              name: "sleeper",
              cron: "0 0 * * *",
              startDate: dayAt(-1),
              endDate: oneHourAfter(dayAt(-1)),
              operator: { type: "shell", command: "sleep 5" },
            },
          ],
        },
      }),
    );
    const running = await waitUntil(
      "the sleeper to start",
      async () => (await attemptsOf(sleeper)).find((a) => a.status === "running"),
      20_000,
      100,
    );
    const r = ok(
      await call(`/attempts/${running.token}/abandon`, { token: admin, body: { reason: "stuck in a test" } }),
    );
    expect(r.task).toBe(sleeper);
    expect(r.position).toMatch(/^\d+$/);
    const after = await attemptsOf(sleeper);
    expect(after.find((a) => a.token === running.token)?.status).toBe("abandoned");
    const again = await call(`/attempts/${running.token}/abandon`, { token: admin, method: "POST" });
    expect(again.status).toBe(422);
    expect(again.body.detail).toContain("has already ended (abandoned)");
  });

  it("POST /backfills, then GET /backfills/{id}", async () => {
    await waitUntil("raw to run its four hours", async () => {
      const a = await attemptsOf("ingest/acme/raw/ALL");
      return a.filter((x) => x.status === "success").length === 4 ? true : undefined;
    });
    const plan = ok(
      await call("/backfills", {
        token: admin,
        body: { task: "ingest/acme/raw", from: hoursAgo(3), to: hoursAgo(2) },
      }),
    );
    expect(plan.backfillId).toEqual(expect.any(String));
    expect(plan.targets).toEqual([
      expect.objectContaining({ task: "ingest/acme/raw/ALL", from: hoursAgo(3), intervals: 2 }),
    ]);
    const progress = await waitUntil("the backfill to finish", async () => {
      const r = ok(await call(`/backfills/${plan.backfillId}`, { token: reader }));
      return r.progress.finished ? r : undefined;
    });
    expect(progress.backfillId).toBe(plan.backfillId);
    expect(progress.progress).toEqual({ done: 2, total: 2, failed: [], finished: true });
    expect(progress.targets[0].task).toBe("ingest/acme/raw/ALL");
    expect((await call("/backfills/no-such-backfill", { token: reader })).status).toBe(404);
  });

  it("the log: pages with `next`, head, verify", async () => {
    const head = ok(await call("/log/head", { token: reader }));
    expect(head.position).toMatch(/^\d+$/);
    expect(head.hash).toMatch(/^[0-9a-f]{64}$/);
    // The embedded log's first position is 0, as on the other logs.
    const first = ok(await call("/log?from=0&limit=5", { token: reader }));
    expect(first.events.map((e: { position: string }) => e.position)).toEqual(["0", "1", "2", "3", "4"]);
    expect(first.events[0].type).toBe("WorkflowDeclared");
    expect(first.events[0].metadata.prevHash).toBe("");
    expect(first.next).toBe("5");
    const second = ok(await call(`/log?from=${first.next}&limit=5`, { token: reader }));
    expect(second.events.map((e: { position: string }) => e.position)).toEqual(["5", "6", "7", "8", "9"]);
    expect(second.events[0].metadata.prevHash).toBe(first.events[4].metadata.hash);
    const end = ok(await call(`/log?from=${head.position}&limit=1000`, { token: reader }));
    expect(end.next).toBeNull();
    expect(end.events[0].metadata.hash).toBe(head.hash);
    const verified = ok(await call("/log/verify", { token: reader, method: "POST" }));
    expect(verified.ok).toBe(true);
    expect(verified.break).toBeNull();
    // Every event up to the head, from position 0: one more than the head's position, or more.
    expect(verified.checked).toBeGreaterThan(Number(head.position));
    expect((await call("/log?from=abc", { token: reader })).status).toBe(400);
  });

  it("?at=: tasks, a task, its history and attempts, and runs as of a position", async () => {
    const head = BigInt(ok(await call("/log/head", { token: reader })).position);
    const at = head / 2n;
    const page = await call(`/tasks?at=${at}&limit=1000`, { token: reader });
    const rows = ok(page).items;
    expect(page.headers.get("chronolog-as-of")).toMatch(new RegExp(`^${at} [0-9a-f]{64} \\d{4}-`));
    // The same answer as the CLI's, as of the same position.
    const cli = chronolog(server.dir, ["tasks", "--at", String(at), "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(rows).toEqual(JSON.parse(cli.stdout));
    const raw = "ingest/acme/raw/ALL";
    const detail = await call(`/tasks/${key(raw)}?at=${at}`, { token: reader });
    if (detail.status === 200) {
      const now = ok(await call(`/tasks/${key(raw)}`, { token: reader }));
      const row = rows.find((r: { task: string }) => r.task === raw);
      expect(detail.body.task.prevIntervalStart).toBe(row.prevIntervalStart);
      expect(detail.body.condition).toBe(row.condition);
      expect(typeof now.task.logicalDate).toBe("string");
      const history = ok(await call(`/tasks/${key(raw)}/history?at=${at}`, { token: reader }));
      expect(history.every((e: { position: string }) => BigInt(e.position) <= at)).toBe(true);
      const attempts = ok(await call(`/tasks/${key(raw)}/attempts?at=${at}`, { token: reader }));
      expect(attempts.every((a: { status: string }) => typeof a.status === "string")).toBe(true);
    } else expect(detail.status).toBe(404);
    const runs = ok(await call(`/runs?at=${at}`, { token: reader }));
    const cliRuns = chronolog(server.dir, ["runs", "--at", String(at), "--json"]);
    expect(runs.map((r: { runId: string; status: string }) => [r.runId, r.status])).toEqual(
      JSON.parse(cliRuns.stdout).map((r: { runId: string; status: string }) => [r.runId, r.status]),
    );
    const past = await call(`/tasks?at=${head + 1000n}`, { token: reader });
    expect(past.status).toBe(400);
    expect(past.body.detail).toContain("past the log's head");
    expect((await call("/tasks?at=x", { token: reader })).status).toBe(400);
  });

  it("metrics, in Prometheus' text format", async () => {
    for (const path of ["/metrics", "/api/v1/metrics"]) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/plain");
      const text = await res.text();
      expect(text).toContain("# TYPE chronolog_dispatches_total counter");
      expect(text).toMatch(/^chronolog_dispatches_total(\{[^}]*\})? [1-9]\d*$/m);
      expect(text).toContain("chronolog_api_requests_total");
      expect(text).toMatch(/^chronolog_log_head_position(\{[^}]*\})? \d+$/m);
    }
  });

  it("events: a live stream of the log", async () => {
    const abort = new AbortController();
    const res = await fetch(`${server.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${reader}` },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    abort.abort();
  });

  it("openapi.json lists every route and is valid OpenAPI 3.1", async () => {
    const doc = ok(await call("/openapi.json"));
    expect(doc.openapi).toBe("3.1.0");
    const listed: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>))
      for (const method of Object.keys(item))
        if (["get", "post", "put", "patch", "delete"].includes(method))
          listed.push(`${method.toUpperCase()} ${path}`);
    expect(listed.sort()).toEqual(ROUTES);
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("the CLI sees the API's writes with their actor", () => {
    const r = chronolog(server.dir, ["history", "ingest/acme/old/ALL", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; metadata: { actor: string } });
    expect(events.at(-1)?.type).toBe("TaskRetired");
    expect(events.at(-1)?.metadata.actor).toBe("api:admin");
  });
});
