import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SseClient } from "./events-support.js";
import {
  type ApiAnswer,
  type ApiProcess,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  headOf,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * The API's edges, against one `chronolog serve --writable` with small caps: the token before
 * the body, the security headers, the Host allowlist of a loopback bind, malformed paths, deep
 * documents, and the caps on streams, views as of a position and long polls.
 */

const TASKS = 20;
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let port: number;
const t: Record<string, string> = {};

function problem(r: ApiAnswer, status: number, detail?: string | RegExp): void {
  expect(r.status, r.text).toBe(status);
  expect(r.type).toContain("application/problem+json");
  expect(r.body.status).toBe(status);
  if (detail !== undefined)
    if (typeof detail === "string") expect(r.body.detail).toContain(detail);
    else expect(r.body.detail).toMatch(detail);
}

/** A GET with a Host header of our choosing (fetch sends the URL's own). */
function getWithHost(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A gauge's value from /metrics (the first sample whose line starts with `sample`). */
async function gauge(sample: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${sample} `));
  if (!line) throw new Error(`no ${sample} in /metrics`);
  return Number(line.slice(sample.length + 1));
}

/** Waits until the gauge reads `value` (the server notices a closed socket a moment later). */
async function gaugeReaches(sample: string, value: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await gauge(sample)) === value) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(await gauge(sample)).toBe(value);
}

beforeAll(async () => {
  const dir = dataDir(left, "edges");
  declareFile(
    dir,
    `tasks:\n${Array.from(
      { length: TASKS },
      (_, i) =>
        `  - { project: p, account: acme, name: t${i}, cron: "0 0 * * *", startDate: "${dayAt(-2)}", operator: { type: noop } }\n`,
    ).join("")}`,
  );
  t.admin = createToken(dir, "admin", "admin");
  t.reader = createToken(dir, "reader", "read");
  for (const n of ["s1", "s2", "s3"]) t[n] = createToken(dir, n, "read");
  server = await startApi(left, dir, [
    "serve",
    "--writable",
    "--max-streams-per-token",
    "3",
    "--max-streams",
    "5",
    "--as-of-builds",
    "1",
  ]);
  call = client(server);
  port = Number(new URL(server.url).port);
});
afterAll(() => left.clear());

describe("the token before the body", () => {
  it("an invalid body without a token is 401, not 400 with the fields", async () => {
    problem(await call("/backfills", { body: {} }), 401, "this needs a token");
    problem(await call("/backfills", { body: "{not json" }), 401);
    problem(await call("/backfills", { body: "x", type: "text/plain" }), 401);
    problem(await call("/declarations", { body: "a: [", type: "application/yaml" }), 401);
    problem(await call("/workflows/none/runs", { body: { params: 5 } }), 401);
    problem(await call("/tasks?limit=banana"), 401);
  });

  it("a token whose scope does not allow the write is 403 before the body is looked at", async () => {
    problem(await call("/backfills", { token: t.reader, body: {} }), 403, "does not allow operate");
    problem(await call("/declarations", { token: t.reader, body: "x", type: "text/plain" }), 403);
  });

  it("a token that may: the body is then checked (400 naming the fields)", async () => {
    const r = await call("/backfills", { token: t.admin, body: {} });
    problem(r, 400);
    expect(r.text).toContain("task");
  });
});

describe("headers and hosts", () => {
  it("every answer carries CSP, X-Frame-Options, nosniff and Referrer-Policy", async () => {
    for (const path of ["/", "/tasks/p", "/api/v1/healthz", "/api/v1/nowhere"]) {
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${t.reader}` } });
      await res.arrayBuffer();
      expect(res.headers.get("content-security-policy"), path).toMatch(/default-src 'self'/);
      expect(res.headers.get("content-security-policy"), path).toMatch(/frame-ancestors 'none'/);
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(res.headers.get("referrer-policy"), path).toBe("no-referrer");
    }
  });

  it("bound to loopback, it answers localhost, 127.0.0.1 and [::1] only (421 otherwise)", async () => {
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`])
      expect((await getWithHost("/api/v1/healthz", host)).status, host).toBe(200);
    for (const host of [
      `rebound.example:${port}`,
      "localhost",
      `localhost:${port + 1}`,
      "evil.127.0.0.1.nip.io",
    ]) {
      const r = await getWithHost("/api/v1/healthz", host);
      expect(r.status, host).toBe(421);
      expect(JSON.parse(r.body).detail).toContain(`localhost:${port}`);
    }
    expect((await getWithHost("/", `rebound.example:${port}`)).status).toBe(421);
  });

  it("a malformed percent-encoding is 400, not 500", async () => {
    for (const path of ["/%E0%A4%A", "/api/v1/tasks/%E0%A4%A", "/ui/%ZZ"]) {
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${t.reader}` } });
      expect(res.status, path).toBe(400);
      expect((await res.json()).detail).toContain("percent-encoding");
    }
  });
});

describe("deep documents", () => {
  it("200,000-deep YAML or JSON is refused before parsing, naming the limit, with a short answer", async () => {
    const before = await headOf(server, t.admin as string);
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
    const bodies = [
      { type: "application/yaml", body: `tasks: ${deep}\n` },
      { type: "application/json", body: `{"tasks": ${deep}}` },
      { type: "application/yaml", body: `tasks:\n${"- ".repeat(100_000)}x\n` },
    ];
    for (const b of bodies) {
      const r = await call("/declarations", { token: t.admin, ...b });
      problem(r, 400);
      expect(r.text).toContain("deeper than 64 levels");
      expect(r.text.length, b.body.slice(0, 30)).toBeLessThan(2000);
    }
    // A long line's syntax error: the excerpt is a window of it, not the line.
    const long = `tasks: [${"1, ".repeat(20_000)}}`;
    const r = await call("/declarations", { token: t.admin, type: "application/yaml", body: long });
    problem(r, 400);
    expect(r.text.length).toBeLessThan(2000);
    expect(await headOf(server, t.admin as string)).toBe(before);
  });

  it("a JSON body is refused as its YAML twin is: a syntax error at its line and column, every problem in one round", async () => {
    const before = await headOf(server, t.admin as string);
    const broken = await call("/declarations", {
      token: t.admin,
      type: "application/json",
      body: '{\n  "tasks": [\n    {"project": "p",, "name": "x"}\n  ]\n}\n',
    });
    problem(broken, 400);
    expect(broken.body.detail).toMatch(/^<request>: line 3, column \d+: /);
    const doc = (format: "json" | "yaml") => {
      const task = {
        project: "p",
        account: "acme",
        name: "odd",
        cron: "0 0 * * *",
        startDate: dayAt(-2),
        operator: { type: "noop" },
        bogus: 1,
      };
      return format === "json"
        ? JSON.stringify({ tasks: [task], extra: 1 })
        : `tasks:\n  - ${JSON.stringify(task)}\nextra: 1\n`;
    };
    const asJson = await call("/declarations?dryRun=true", {
      token: t.admin,
      type: "application/json",
      body: doc("json"),
    });
    const asYaml = await call("/declarations?dryRun=true", {
      token: t.admin,
      type: "application/yaml",
      body: doc("yaml"),
    });
    problem(asJson, 400);
    problem(asYaml, 400);
    expect(asJson.body.detail).toContain('unknown field "extra"');
    expect(asJson.body.detail).toContain('tasks[0].bogus: p/acme/odd/ALL: unknown field "bogus"');
    expect(asJson.body.issues).toEqual(asYaml.body.issues);
    expect(await headOf(server, t.admin as string)).toBe(before);
  });

  it("a document nested within the limit is declared as before", async () => {
    const r = await call("/declarations?dryRun=true", {
      token: t.admin,
      type: "application/yaml",
      body: `tasks:\n  - project: p\n    account: acme\n    name: nested\n    cron: "0 0 * * *"\n    startDate: "${dayAt(-2)}"\n    operator: { type: noop }\n    config: { a: { b: { c: { d: [[[1]]] } } } }\n`,
    });
    expect(r.status, r.text).toBe(200);
  });
});

describe("caps", () => {
  it("live streams: 3 per token and 5 in all here, 429 with a problem document past either", async () => {
    const url = `${server.url}/api/v1/events`;
    const open = (token: string) => new SseClient(url, { authorization: `Bearer ${token}` });
    const s1 = [open(t.s1 as string), open(t.s1 as string), open(t.s1 as string)];
    for (const s of s1) expect(await s.opened).toBe(200);
    const over = await call("/events", { token: t.s1 });
    problem(over, 429, "token s1 already has 3 streams open");
    expect(over.headers.get("retry-after")).toBe("5");
    expect(over.body.limit).toBe(3);
    const s2 = [open(t.s2 as string), open(t.s2 as string)];
    for (const s of s2) expect(await s.opened).toBe(200);
    await gaugeReaches('chronolog_api_streams_open{kind="open"}', 5);
    problem(await call("/events", { token: t.s3 }), 429, "this server already has 5 streams open");
    // A stream closed by its client frees its place.
    (s1[0] as SseClient).close();
    await gaugeReaches('chronolog_api_streams_open{kind="open"}', 4);
    const s3 = open(t.s3 as string);
    expect(await s3.opened).toBe(200);
    for (const s of [...s1, ...s2, s3]) s.close();
    await gaugeReaches('chronolog_api_streams_open{kind="open"}', 0);
    expect(await gauge('chronolog_api_streams_open{kind="limit"}')).toBe(5);
  });

  it("views as of a position: one folded at once here, more wait or are refused with 503 and Retry-After", async () => {
    const head = Number(await headOf(server, t.admin as string));
    const positions = Array.from({ length: 30 }, (_, i) => i % (head + 1));
    const answers = await Promise.all(positions.map((p) => call(`/tasks?at=${p}`, { token: t.reader })));
    for (const r of answers) {
      if (r.status === 200) continue;
      problem(r, 503, "views as of a position are under way");
      expect(r.headers.get("retry-after")).toBe("1");
    }
    expect(answers.some((r) => r.status === 200)).toBe(true);
    expect(await gauge('chronolog_api_as_of_builds{state="running"}')).toBe(0);
    expect(await gauge('chronolog_api_as_of_builds{state="waiting"}')).toBe(0);
    // Once the burst is over, any position is served.
    const again = await call(`/tasks?at=${head}`, { token: t.reader });
    expect(again.status, again.text).toBe(200);
  });

  it("a long poll that times out leaves no waiter behind", async () => {
    expect(await gauge("chronolog_api_waiters")).toBe(0);
    const r = await call(`/runs/${encodeURIComponent("none@2026-01-01T00:00:00Z")}?wait=1500ms`, {
      token: t.reader,
    });
    problem(r, 404);
    expect(await gauge("chronolog_api_waiters")).toBe(0);
  });
});
