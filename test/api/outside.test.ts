import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import {
  type ApiProcess,
  apiWritesAfter,
  client,
  createToken,
  dataDir,
  declareFile,
  headOf,
  key,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * Outside tasks over HTTP: `POST /tasks/{key}/intervals/{date}` reports an interval of a task
 * declared `operator: { type: external }`, with the operate scope on its project; its children,
 * run by the scheduler, go on only once its intervals are in, in order. Refusals are problem
 * documents and write nothing.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let admin: string;
let reader: string;
let elsewhere: string;
let producer: string;
const now = Math.floor(Date.now() / HOUR) * HOUR;
/** The last two hours that have ended, and the one going on. */
const h0 = new Date(now - 2 * HOUR).toISOString();
const h1 = new Date(now - HOUR).toISOString();
const h2 = new Date(now).toISOString();
/** An interval as `why` names it: the day alone at midnight UTC, else to the minute. */
const said = (iso: string) => (iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : `${iso.slice(0, 16)}Z`);
const PRICES = "vendor/acme/prices/ALL";
const USES = "vendor/acme/uses/ALL";
const SHELL = "vendor/acme/shell/ALL";

beforeAll(async () => {
  const dir = dataDir(left, "outside");
  const hourly = `cron: "0 * * * *", startDate: "${h0}", endDate: "${h1}"`;
  declareFile(
    dir,
    `tasks:
  - { project: vendor, account: acme, name: prices, ${hourly}, operator: { type: external } }
  - { project: vendor, account: acme, name: uses, ${hourly}, parents: [vendor/acme/prices], operator: { type: shell, command: "true" } }
  - { project: vendor, account: acme, name: shell, ${hourly}, operator: { type: shell, command: "true" } }
`,
  );
  admin = createToken(dir, "admin", "admin");
  reader = createToken(dir, "reader", "read");
  elsewhere = createToken(dir, "elsewhere", "operate", ["other"]);
  producer = createToken(dir, "acme-drop", "operate", ["vendor"]);
  server = await startApi(left, dir, ["up", "--workers", "1"]);
  call = client(server);
});
afterAll(() => left.clear());

const task = async (id: string) => (await call(`/tasks/${key(id)}`, { token: reader })).body;
const report = (date: string, body: unknown, token = producer, id = PRICES) =>
  call(`/tasks/${key(id)}/intervals/${encodeURIComponent(date)}`, { token, body });

describe("reports of an outside task over HTTP", () => {
  it("the child waits for an outside report; a refused report writes nothing", async () => {
    await waitUntil("the child to wait for the report", async () =>
      (await task(USES)).condition === "blocked" ? true : undefined,
    );
    const child = await task(USES);
    expect(child.reasons).toEqual([`waits for an outside report of ${PRICES} ${said(h0)}`]);
    const outside = await task(PRICES);
    expect(outside.condition).toBe("held");
    expect(outside.nextSteps.map((s: { action: string }) => s.action)).toEqual([
      "report_succeeded",
      "report_failed",
    ]);

    const before = await headOf(server, admin);
    const refused = [
      [reader, PRICES, h0, { outcome: "succeeded" }, 403],
      [elsewhere, PRICES, h0, { outcome: "succeeded" }, 403],
      [producer, PRICES, h0, { outcome: "done" }, 400],
      [producer, PRICES, h0, { outcome: "failed" }, 400],
      [producer, PRICES, "2000-01-01T00:30:00.000Z", { outcome: "succeeded" }, 400],
      [producer, PRICES, h2, { outcome: "succeeded" }, 422],
      [producer, "vendor/acme/nope/ALL", h0, { outcome: "succeeded" }, 404],
      [producer, SHELL, h0, { outcome: "succeeded" }, 422],
    ] as const;
    for (const [token, id, date, body, status] of refused) {
      const r = await report(date, body, token, id);
      expect(r.status, `${id} ${date} ${JSON.stringify(body)}: ${r.text}`).toBe(status);
      expect(r.type).toContain("problem+json");
    }
    expect((await report(h2, { outcome: "succeeded" })).body.detail).toContain("has not ended yet");
    expect((await report(h0, { outcome: "succeeded" }, producer, SHELL)).body.detail).toContain(
      "is not an outside task",
    );
    expect(await apiWritesAfter(server, admin, before)).toEqual([]);
  }, 180_000);

  it("out of order: a later interval is held until the earlier one is in, then the child runs both", async () => {
    const held = await report(h1, { outcome: "succeeded", reason: "file 2 of 2" });
    expect(held.status, held.text).toBe(200);
    expect(held.body).toMatchObject({ task: PRICES, logicalDate: h1, status: "held", awaited: h0 });
    const outside = await task(PRICES);
    expect(outside.reasons[0]).toContain("held until it is in (its intervals complete in order)");
    expect(outside.reports).toEqual([
      expect.objectContaining({
        logicalDate: h1,
        outcome: "succeeded",
        by: "api:acme-drop",
        standing: "held",
      }),
    ]);
    expect((await task(USES)).task.prevIntervalStart).toBeNull();

    // The same report again: nothing written, and said so.
    const before = await headOf(server, admin);
    const again = await report(h1, { outcome: "succeeded" });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "unchanged", position: "-1" });
    expect(again.body.message).toContain("nothing written");
    expect(await apiWritesAfter(server, admin, before)).toEqual([]);

    const first = await report(h0, { outcome: "succeeded" });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ status: "recorded", awaited: h0 });
    await waitUntil(
      "the child to run both intervals",
      async () => ((await task(USES)).task.prevIntervalStart === h1 ? true : undefined),
      60_000,
    );
    expect((await task(PRICES)).task.prevIntervalStart).toBe(h1);
    const history = (await call(`/tasks/${key(PRICES)}/history`, { token: reader })).body as Array<{
      type: string;
      data: { by?: string; outcome?: string };
      metadata: { actor: string };
    }>;
    const reports = history.filter((e) => e.type === "IntervalReported");
    expect(reports.map((e) => [e.data.outcome, e.data.by, e.metadata.actor])).toEqual([
      ["succeeded", "api:acme-drop", "api:acme-drop"],
      ["succeeded", "api:acme-drop", "api:acme-drop"],
    ]);
    // Nothing was ever dispatched for it.
    expect(history.some((e) => e.type === "DispatchIntended")).toBe(false);
  }, 180_000);

  it("a succeeded interval reported failed is refused naming both outcomes, nothing written", async () => {
    const before = await headOf(server, admin);
    const r = await report(h0, { outcome: "failed", reason: "wrong file" });
    expect(r.status, r.text).toBe(422);
    expect(r.body.detail).toMatch(
      /was reported succeeded by api:acme-drop .*: a report of failed is refused/,
    );
    expect(await apiWritesAfter(server, admin, before)).toEqual([]);
  }, 180_000);
});
