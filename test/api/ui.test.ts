import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import { type ApiProcess, createToken, dataDir, dayAt, declareFile, Leftovers, startApi } from "./support.js";

/** The web UI's endpoints (/ui/...), the query token of /events and the UI's static files. */

const DECLARATION = `
tasks:
  - { project: ingest, account: acme, name: raw, cron: "0 0 * * *", startDate: "${dayAt(-3)}",
      operator: { type: noop } }
  - { project: ingest, account: acme, name: orphan, cron: "0 0 * * *", startDate: "${dayAt(-3)}",
      parents: ["ingest/acme/not_there"], operator: { type: noop } }
workflows:
  - name: sales_daily
    project: sales
    account: acme
    cron: "0 0 * * *"
    startDate: "${dayAt(-3)}"
    tasks:
      - { name: orders, parents: ["ingest/acme/raw"], operator: { type: noop } }
`;

const left = new Leftovers();
let server: ApiProcess;
let reader: string;

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers });
const asReader = (path: string) => get(path, { authorization: `Bearer ${reader}` });

beforeAll(async () => {
  const dir = dataDir(left, "ui");
  reader = createToken(dir, "reader", "read");
  declareFile(dir, DECLARATION);
  server = await startApi(left, dir, ["up"]);
  await waitUntil(
    "the example's days to succeed",
    async () => {
      const g = await (await asReader("/ui/grid")).json();
      const raw = g.rows?.find((r: { task: string }) => r.task === "ingest/acme/raw/ALL");
      return raw?.cells.filter((c: { state: string }) => c.state === "success").length >= 3
        ? true
        : undefined;
    },
    30_000,
  );
});

afterAll(() => left.clear());

describe("the web UI's API", () => {
  it("whoami names the token's scope, and the event types to listen for", async () => {
    const r = await asReader("/ui/whoami");
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toMatchObject({ name: "reader", scope: "read", actor: "api:reader" });
    expect(body.eventTypes).toContain("TaskPaused");
    expect((await get("/ui/whoami")).status).toBe(401);
  });

  it("the grid: tasks by their recent logical dates, filtered and paged", async () => {
    const g = await (await asReader("/ui/grid")).json();
    expect(g.total).toBe(3);
    const raw = g.rows.find((r: { task: string }) => r.task === "ingest/acme/raw/ALL");
    // Newest first: today's interval not due yet, then the three days that ran.
    expect(raw.cells.map((c: { state: string }) => c.state)).toEqual([
      "not_due",
      "success",
      "success",
      "success",
    ]);
    const sales = await (await asReader("/ui/grid?workflow=sales_daily")).json();
    expect(sales.rows.map((r: { task: string }) => r.task)).toEqual(["sales/acme/orders/ALL"]);
    const paged = await (await asReader("/ui/grid?limit=1&page=1")).json();
    expect(paged).toMatchObject({ total: 3, pages: 3, page: 1 });
    expect(paged.rows).toHaveLength(1);
    const blocked = await (await asReader("/ui/grid?state=blocked")).json();
    expect(blocked.rows.map((r: { task: string }) => r.task)).toEqual(["ingest/acme/orphan/ALL"]);
  });

  it("the grid as of a position says so", async () => {
    const r = await asReader("/ui/grid?at=3");
    expect(r.status).toBe(200);
    expect(r.headers.get("chronolog-as-of")).toMatch(/^3 /);
    const g = await r.json();
    expect(g.position).toBe("3");
  });

  it("the graph: nodes, edges and a missing parent, whole or one project", async () => {
    const g = await (await asReader("/ui/graph")).json();
    const ids = g.nodes.map((n: { id: string }) => n.id).sort();
    expect(ids).toEqual([
      "ingest/acme/not_there/ALL",
      "ingest/acme/orphan/ALL",
      "ingest/acme/raw/ALL",
      "sales/acme/orders/ALL",
    ]);
    expect(g.nodes.find((n: { id: string }) => n.id === "ingest/acme/not_there/ALL")).toMatchObject({
      missing: true,
    });
    expect(g.edges).toContainEqual({ from: "ingest/acme/raw/ALL", to: "sales/acme/orders/ALL" });
    const orphan = g.nodes.find((n: { id: string }) => n.id === "ingest/acme/orphan/ALL");
    expect(orphan.condition).toBe("blocked");
    expect(orphan.reasons.join(" ")).toContain("ingest/acme/not_there");
    const sales = await (await asReader("/ui/graph?project=sales")).json();
    // The project's task, and its parent from another project drawn as outside it.
    expect(sales.nodes.map((n: { id: string; outside?: boolean }) => [n.id, !!n.outside])).toEqual([
      ["sales/acme/orders/ALL", false],
      ["ingest/acme/raw/ALL", true],
    ]);
  });

  it("/events takes its token as ?access_token=, and no other route does", async () => {
    const ctl = new AbortController();
    const r = await fetch(`${server.url}/api/v1/events?from=0&access_token=${reader}`, {
      signal: ctl.signal,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    const reader2 = r.body?.getReader();
    const first = new TextDecoder().decode((await reader2?.read())?.value);
    expect(first).toContain("id: ");
    ctl.abort();
    expect((await get("/api/v1/events?access_token=chl.nobody.00")).status).toBe(401);
    expect((await get(`/api/v1/tasks?access_token=${reader}`)).status).toBe(401);
    expect((await get(`/ui/grid?access_token=${reader}`)).status).toBe(401);
  });

  it("serves the built UI at / and its index.html for any other path outside the API", async () => {
    const root = await get("/");
    expect(root.status).toBe(200);
    expect(root.headers.get("content-type")).toContain("text/html");
    const html = await root.text();
    expect(html).toContain('<div id="app">');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1] as string;
    const js = await get(script);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("javascript");
    expect(await (await get("/some/page")).text()).toBe(html);
    expect((await get("/api/v1/nothing")).status).toBe(404);
    expect((await get("/../../etc/passwd")).status).toBe(200);
    expect(await (await get("/%2e%2e/%2e%2e/package.json")).text()).toBe(html);
  });
});
