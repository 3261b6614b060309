import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

/** Who may do what: tokens, scopes and project limits, against one `chronolog serve --writable`. */

const DECLARATION = `
workflows:
  - name: sales_daily
    project: sales
    account: acme
    cron: "0 2 * * *"
    startDate: "${dayAt(-3)}"
    tasks:
      - name: orders
        operator: { type: noop }
  - name: ingest_daily
    project: ingest
    account: acme
    cron: "0 2 * * *"
    startDate: "${dayAt(-3)}"
    tasks:
      - name: raw
        operator: { type: noop }
`;

const standalone = (project: string, name: string) => ({
  tasks: [
    {
      project,
      account: "acme",
      name,
      cron: "0 0 * * *",
      startDate: dayAt(-3),
      operator: { type: "noop" },
    },
  ],
});

const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
const tokens: Record<string, string> = {};

function problem(r: ApiAnswer, status: number, detail?: string | RegExp): void {
  expect(r.status, r.text).toBe(status);
  expect(r.type).toContain("application/problem+json");
  expect(r.body.status).toBe(status);
  if (detail !== undefined)
    if (typeof detail === "string") expect(r.body.detail).toContain(detail);
    else expect(r.body.detail).toMatch(detail);
}

beforeAll(async () => {
  const dir = dataDir(left, "auth");
  declareFile(dir, DECLARATION);
  tokens.reader = createToken(dir, "reader", "read");
  tokens.declarer = createToken(dir, "declarer", "declare");
  tokens.operator = createToken(dir, "operator", "operate");
  tokens.admin = createToken(dir, "admin", "admin");
  tokens.producer = createToken(dir, "producer", "admin", ["sales"]);
  tokens.doomed = createToken(dir, "doomed", "read");
  server = await startApi(left, dir, ["serve", "--writable"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("authentication", () => {
  it("no token: 401", async () => {
    problem(await call("/tasks"), 401, "this needs a token");
    problem(await call("/declarations", { body: standalone("sales", "x") }), 401);
  });

  it("a malformed Authorization header: 401", async () => {
    for (const header of ["Basic dXNlcjpwYXNz", "Bearer", "Bearer a b", tokens.reader as string])
      problem(await call("/tasks", { headers: { authorization: header } }), 401, "is not `Bearer <token>`");
  });

  it("a token the log never issued: 401", async () => {
    problem(
      await call("/tasks", { token: `chl.reader.${"0".repeat(64)}` }),
      401,
      "not one the log has issued",
    );
    problem(await call("/tasks", { token: "whatever" }), 401, "not one the log has issued");
  });

  it("a token revoked while the server runs is refused on the next request", async () => {
    expect((await call("/tasks", { token: tokens.doomed })).status).toBe(200);
    const r = chronolog(server.dir, ["token", "revoke", "doomed", "--reason", "leaked"]);
    expect(r.code, r.stderr).toBe(0);
    problem(await call("/tasks", { token: tokens.doomed }), 401, "this token was revoked");
  });

  it("healthz and readyz need no token", async () => {
    expect((await call("/healthz")).status).toBe(200);
    expect((await call("/readyz")).status).toBe(200);
  });
});

describe("scopes", () => {
  it("a read token reads, and is refused every write with 403", async () => {
    expect((await call("/tasks", { token: tokens.reader })).status).toBe(200);
    const before = await headOf(server, tokens.reader as string);
    problem(
      await call("/declarations", { token: tokens.reader, body: standalone("sales", "r1") }),
      403,
      "token reader has scope read, which does not allow declare",
    );
    problem(
      await call(`/tasks/${key("sales/acme/orders")}/pause`, { token: tokens.reader, method: "POST" }),
      403,
      "does not allow operate",
    );
    problem(await call("/workflows/sales_daily/runs", { token: tokens.reader, method: "POST" }), 403);
    expect(await headOf(server, tokens.reader as string)).toBe(before);
  });

  it("a declare token declares, and may not pause or trigger (403)", async () => {
    const r = await call("/declarations", { token: tokens.declarer, body: standalone("sales", "d1") });
    expect(r.status, r.text).toBe(200);
    expect(r.body.tasks[0]).toMatchObject({ task: "sales/acme/d1/ALL", outcome: "declared" });
    problem(
      await call(`/tasks/${key("sales/acme/d1")}/pause`, { token: tokens.declarer, method: "POST" }),
      403,
      "token declarer has scope declare, which does not allow operate",
    );
    problem(await call("/workflows/sales_daily/runs", { token: tokens.declarer, method: "POST" }), 403);
  });

  it("an operate token pauses, and may not declare (403)", async () => {
    problem(
      await call("/declarations", { token: tokens.operator, body: standalone("sales", "o1") }),
      403,
      "does not allow declare",
    );
    const r = await call(`/tasks/${key("sales/acme/d1")}/pause`, { token: tokens.operator, method: "POST" });
    expect(r.status, r.text).toBe(200);
    const resumed = await call(`/tasks/${key("sales/acme/d1")}/resume`, {
      token: tokens.operator,
      method: "POST",
    });
    expect(resumed.status, resumed.text).toBe(200);
  });
});

describe("a token limited to a project", () => {
  it("declares, pauses and triggers in sales", async () => {
    const declared = await call("/declarations", { token: tokens.producer, body: standalone("sales", "p1") });
    expect(declared.status, declared.text).toBe(200);
    const paused = await call(`/tasks/${key("sales/acme/p1")}/pause`, {
      token: tokens.producer,
      method: "POST",
      body: { reason: "by the producer" },
    });
    expect(paused.status, paused.text).toBe(200);
    const run = await call("/workflows/sales_daily/runs", { token: tokens.producer, method: "POST" });
    expect(run.status, run.text).toBe(200);
    expect(run.body.runId).toMatch(/^sales_daily@/);
  });

  it("cannot declare, pause or trigger anything of ingest (403), and writes nothing", async () => {
    const before = await headOf(server, tokens.reader as string);
    problem(
      await call("/declarations", { token: tokens.producer, body: standalone("ingest", "p2") }),
      403,
      "token producer is limited to sales: it cannot declare tasks in project ingest",
    );
    // One document, half in sales and half in ingest: refused whole.
    const mixed = {
      tasks: [...standalone("sales", "p3").tasks, ...standalone("ingest", "p3").tasks],
    };
    problem(await call("/declarations", { token: tokens.producer, body: mixed }), 403, "project ingest");
    problem(
      await call("/declarations", {
        token: tokens.producer,
        type: "application/yaml",
        body: `workflows:
  - name: ingest_more
    project: ingest
    account: acme
    cron: "0 3 * * *"
    startDate: "${dayAt(-3)}"
    tasks:
      - name: more
        operator: { type: noop }
`,
      }),
      403,
      /cannot declare (tasks|workflows) in project ingest/,
    );
    problem(
      await call(`/tasks/${key("ingest/acme/raw")}/pause`, { token: tokens.producer, method: "POST" }),
      403,
      "cannot pause in project ingest",
    );
    problem(
      await call(`/tasks/${key("ingest/acme/raw")}/retire`, { token: tokens.producer, method: "POST" }),
      403,
      "cannot retire in project ingest",
    );
    problem(
      await call("/workflows/ingest_daily/runs", { token: tokens.producer, method: "POST" }),
      403,
      "cannot trigger workflows in project ingest",
    );
    problem(
      await call("/backfills", {
        token: tokens.producer,
        body: { task: "ingest/acme/raw", from: dayAt(-3), to: dayAt(-2) },
      }),
      403,
      "cannot backfill in project ingest",
    );
    problem(
      await call("/declarations", {
        token: tokens.producer,
        body: { connections: [{ name: "warehouse", maxParallelism: 2 }] },
      }),
      403,
      "connections are shared by every project",
    );
    expect(await headOf(server, tokens.reader as string)).toBe(before);
    // Reads are not limited.
    const read = await call(`/tasks/${key("ingest/acme/raw")}`, { token: tokens.producer });
    expect(read.status, read.text).toBe(200);
  });

  it("a token without project limits declares a connection", async () => {
    const r = await call("/declarations", {
      token: tokens.admin,
      body: { connections: [{ name: "warehouse", maxParallelism: 2 }] },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.connections).toEqual([{ name: "warehouse", outcome: "declared" }]);
  });
});

describe("the actor of a write", () => {
  it("is api:<token name>, in the API's history and the CLI's", async () => {
    const history = await call(`/tasks/${key("sales/acme/p1/ALL")}/history`, { token: tokens.reader });
    expect(history.status).toBe(200);
    const events = history.body as Array<{ type: string; metadata: { actor: string } }>;
    expect(events.map((e) => [e.type, e.metadata.actor])).toEqual([
      ["TaskDeclared", "api:producer"],
      ["TaskPaused", "api:producer"],
    ]);
    const r = chronolog(server.dir, ["history", "sales/acme/d1/ALL", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const cli = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; metadata: { actor: string } });
    expect(cli.map((e) => [e.type, e.metadata.actor])).toEqual([
      ["TaskDeclared", "api:declarer"],
      ["TaskPaused", "api:operator"],
      ["TaskResumed", "api:operator"],
    ]);
  });
});
