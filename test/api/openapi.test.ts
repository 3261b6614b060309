import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type ApiServer, issueToken, startApiServer } from "@chronolog/api";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { Validator } from "@seriousme/openapi-schema-validator";
import createClient from "openapi-fetch";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDataDir } from "../support/cli.js";
import { type Document, lintOpenApi, operationsOf } from "./openapi-lint.js";

/**
 * The OpenAPI document as a producer's CI would use it, against a real server on loopback:
 * linted, turned into types with openapi-typescript, a client written against those types
 * type-checked, then run with openapi-fetch and a token.
 */

const NODE_MODULES = new URL("../../node_modules", import.meta.url);

/**
 * A client as a producer would write it against the generated types; `mistakes` holds calls
 * the types must refuse (an unused `@ts-expect-error` is itself an error).
 */
const CLIENT = `
import type { Client } from "openapi-fetch";
import type createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const TASK = "sales/acme/orders/ALL";

export async function calls(create: typeof createClient, baseUrl: string, token: string) {
  const api = create<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
  const anonymous = create<paths>({ baseUrl });
  const health = await api.GET("/api/v1/healthz");
  const declared = await api.POST("/api/v1/declarations", {
    params: { query: { dryRun: "false" } },
    body: {
      tasks: [
        {
          project: "sales",
          account: "acme",
          name: "orders",
          cron: "0 0 1 1 *",
          startDate: "2099-01-01T00:00:00Z",
          operator: { type: "noop" },
        },
      ],
    },
  });
  const page = await api.GET("/api/v1/tasks", { params: { query: { project: "sales", limit: 10 } } });
  const task = await api.GET("/api/v1/tasks/{key}", { params: { path: { key: TASK } } });
  const paused = await api.POST("/api/v1/tasks/{key}/pause", {
    params: { path: { key: TASK } },
    body: { reason: "from a typed client" },
  });
  const head = await api.GET("/api/v1/log/head");
  const refused = await anonymous.GET("/api/v1/tasks", {});
  const declaredTasks: string[] | undefined = declared.data?.tasks.map((t) => \`\${t.task} \${t.outcome}\`);
  const statuses: string[] | undefined = page.data?.items.map((t) => \`\${t.task} \${t.status}\`);
  const position: string | undefined = paused.data?.position;
  const problem: string | undefined = refused.error?.type;
  return {
    ok: health.data?.ok,
    declaredTasks,
    statuses,
    taskId: task.data?.task.id,
    position,
    head: head.data?.position,
    refused: refused.response.status,
    problem,
  };
}

export function mistakes(api: Client<paths>) {
  // @ts-expect-error: no such route
  void api.GET("/api/v1/no-such-route");
  // @ts-expect-error: the path parameter is key
  void api.GET("/api/v1/tasks/{key}", { params: { path: { name: TASK } } });
  // @ts-expect-error: a status the API does not know
  void api.GET("/api/v1/tasks", { params: { query: { status: "sleeping" } } });
  // @ts-expect-error: pause is a POST
  void api.GET("/api/v1/tasks/{key}/pause", { params: { path: { key: TASK } } });
}
`;

let dir: string;
let log: EventLog;
let server: ApiServer;
let admin: string;
let doc: Document;

beforeAll(async () => {
  dir = tempDataDir("api-openapi");
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test", synchronous: "NORMAL" });
  admin = (await issueToken(log, { name: "producer", scope: "admin" })).token;
  server = await startApiServer({ log, writeLog: log, dataDir: dir, listen: "127.0.0.1:0" });
  const res = await fetch(`${server.url}/api/v1/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Document;
});
afterAll(async () => {
  await server?.close();
  await log?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the OpenAPI document, for a generated client", () => {
  it("is valid OpenAPI 3.1, and passes our own rules", async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as never);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(lintOpenApi(doc)).toEqual([]);
  });

  it("the rules catch what they are for", () => {
    type Op = { operationId?: string; security?: unknown; parameters: Array<{ in: string }> };
    const broken = structuredClone(doc) as { servers?: unknown; paths: Record<string, { get: Op }> };
    delete broken.servers;
    const get = broken.paths["/api/v1/tasks/{key}"]?.get as Op;
    delete get.operationId;
    delete get.security;
    get.parameters = get.parameters.filter((p) => p.in !== "path");
    (broken.paths["/api/v1/log/head"]?.get as Op).operationId = "listTasks";
    expect(lintOpenApi(broken as unknown as Document)).toEqual([
      "no servers, or one without a url",
      "GET /api/v1/tasks/{key}: no operationId",
      "GET /api/v1/tasks/{key}: answers 401 but has no security",
      "GET /api/v1/tasks/{key}: path parameter key is not declared",
      "GET /api/v1/log/head: operationId listTasks is also GET /api/v1/tasks's",
    ]);
  });

  it("says which operations need a token, as the server does", async () => {
    for (const { method, path, op } of operationsOf(doc)) {
      if (method !== "get" || path.includes("{")) continue;
      const res = await fetch(`${server.url}${path}`);
      await res.body?.cancel();
      expect([path, res.status === 401], `${path}: ${res.status}`).toEqual([path, !!op.security?.length]);
    }
  });

  it("generates types a typed client compiles against, and calls the server with", async () => {
    const out = join(dir, "client");
    mkdirSync(out);
    // Where the producer's own dependencies are: openapi-fetch, and TypeScript's Node types.
    symlinkSync(NODE_MODULES, join(out, "node_modules"), "dir");
    writeFileSync(join(out, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(out, "schema.ts"), astToString(await openapiTS(doc as never)));
    writeFileSync(join(out, "client.ts"), CLIENT);

    const program = ts.createProgram([join(out, "client.ts")], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
      types: ["node"],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program);
    const host = {
      getCanonicalFileName: (f: string) => f,
      getCurrentDirectory: () => out,
      getNewLine: () => "\n",
    };
    expect(ts.formatDiagnostics(diagnostics, host)).toBe("");

    // The same file, run: its types erased, its calls made against the server.
    const js = ts.transpileModule(CLIENT, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    writeFileSync(join(out, "client.mjs"), js);
    const { calls } = (await import(pathToFileURL(join(out, "client.mjs")).href)) as {
      calls: (create: typeof createClient, baseUrl: string, token: string) => Promise<unknown>;
    };
    const head = await log.headPosition();
    expect(await calls(createClient, server.url, admin)).toEqual({
      ok: true,
      declaredTasks: ["sales/acme/orders/ALL declared"],
      statuses: ["sales/acme/orders/ALL active"],
      taskId: "sales/acme/orders/ALL",
      position: String(head + 2n),
      head: String(head + 2n),
      refused: 401,
      problem: expect.stringContaining("unauthenticated"),
    });
  });
});
