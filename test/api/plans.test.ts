import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
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
 * The writes that set tasks back say what they will do: `dryRun: true` on POST /backfills,
 * POST /workflows/{name}/runs and POST /runs/{id}/rerun returns the plan the real call carries
 * out (the same one), and writes nothing; dates are taken as the CLI takes them (a day: the
 * intervals that start on it in the task's zone). A daily 03:30 workflow whose `report` task was
 * declared to start a day after `extract`.
 */
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let admin: string;
let reader: string;
let otherProject: string;

const dayOf = (n: number) => dayAt(n).slice(0, 10);
const at330 = (n: number) => `${dayOf(n)}T03:30:00.000Z`;
const EXTRACT = "sales/acme/extract/ALL";
const REPORT = "sales/acme/report/ALL";

beforeAll(async () => {
  const dir = dataDir(left, "plans");
  declareFile(
    dir,
    `workflows:
  - name: etl
    project: sales
    account: acme
    cron: "30 3 * * *"
    startDate: "${dayAt(-6)}"
    catchup: false
    params: { mode: full }
    tasks:
      - { name: extract, operator: { type: noop } }
      - { name: report, parents: [extract], startDate: "${dayAt(-4)}", operator: { type: noop } }
`,
  );
  admin = createToken(dir, "admin", "admin");
  reader = createToken(dir, "reader", "read");
  otherProject = createToken(dir, "other", "operate", ["finance"]);
  server = await startApi(left, dir, ["serve", "--writable"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("dryRun", () => {
  it("POST /backfills: the plan, each descendant held to its own startDate, and nothing written; then the same, done", async () => {
    const body = { task: "sales/acme/extract", from: dayOf(-5), to: dayOf(-3), downstream: true };
    const before = await headOf(server, admin);
    const dry = await call("/backfills", { token: admin, body: { ...body, dryRun: true } });
    expect(dry.status, dry.text).toBe(200);
    expect(await headOf(server, admin)).toBe(before);
    expect(dry.body.dryRun).toBe(true);
    // It starts no backfill, so it names none (an id would be one GET /backfills/{id} never finds).
    expect(dry.body.backfillId).toBeUndefined();
    for (const t of dry.body.targets) expect(t.backfillId).toBeUndefined();
    expect(dry.body.targets).toEqual([
      expect.objectContaining({ task: EXTRACT, from: at330(-5), until: at330(-3), intervals: 3, notes: [] }),
      expect.objectContaining({
        task: REPORT,
        from: at330(-4),
        until: at330(-3),
        intervals: 2,
        notes: [
          expect.stringContaining(
            `1 interval from ${at330(-5).replace(":00.000Z", "Z")} before it not reset`,
          ),
        ],
      }),
    ]);

    // Scoped as the real call: a reader, or an operator of another project, is refused.
    expect((await call("/backfills", { token: reader, body: { ...body, dryRun: true } })).status).toBe(403);
    expect((await call("/backfills", { token: otherProject, body: { ...body, dryRun: true } })).status).toBe(
      403,
    );

    const real = await call("/backfills", { token: admin, body });
    expect(real.status, real.text).toBe(200);
    expect(real.body.dryRun).toBeUndefined();
    expect((await call(`/backfills/${real.body.backfillId}`, { token: admin })).status).toBe(200);
    // A dry run that would join the pending backfill names it.
    const again = await call("/backfills", { token: admin, body: { ...body, dryRun: true } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.backfillId).toBeUndefined();
    expect(again.body.targets.map((t: { backfillId?: string }) => t.backfillId)).toEqual([
      real.body.backfillId,
      real.body.backfillId,
    ]);
    const strip = (ts: Array<Record<string, unknown>>) => ts.map(({ backfillId: _, ...t }) => t);
    expect(strip(real.body.targets)).toEqual(strip(dry.body.targets));
    expect(await headOf(server, admin)).not.toBe(before);
  });

  it("POST /workflows/{name}/runs: refused by the pending backfill, dry or not; a rerun of a running run too", async () => {
    const before = await headOf(server, admin);
    for (const dryRun of [true, false]) {
      const r = await call("/workflows/etl/runs", {
        token: admin,
        body: { logicalDate: dayOf(-3), params: { mode: "quick" }, dryRun },
      });
      expect(r.status, r.text).toBe(422);
      expect(r.body.detail).toContain(`trigger of etl@${at330(-3)} refused: backfill `);
      expect(r.body.detail).toContain(`is pending on ${EXTRACT}`);
      expect(await headOf(server, admin)).toBe(before);
    }
  });

  it("POST /workflows/{name}/runs: any day is refused while the backfill is pending; a day not in the calendar is bad input", async () => {
    // Another day: the pending backfill still stands in the way (a trigger never joins one).
    const refused = await call("/workflows/etl/runs", {
      token: admin,
      body: { logicalDate: dayOf(-2), dryRun: true },
    });
    expect(refused.status).toBe(422);
    // A day with no interval of the workflow's schedule is not there to run.
    const bad = await call("/workflows/etl/runs", {
      token: admin,
      body: { logicalDate: "2026-02-30", dryRun: true },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("is not a day of the calendar");
  });
  it("POST /backfills/{id}/cancel: what it would do, nothing written; scoped; then done, and GET says so", async () => {
    const task = await call(`/tasks/${encodeURIComponent(EXTRACT)}`, { token: admin });
    const id = task.body.task.backfill.backfillId as string;
    const path = `/backfills/${id}/cancel`;
    const before = await headOf(server, admin);
    // A reader, an operator of another project, and a body that is not JSON are refused.
    expect((await call(path, { token: reader, body: {} })).status).toBe(403);
    expect((await call(path, { token: otherProject, body: {} })).status).toBe(403);
    expect((await call(path, { token: admin, body: { reason: 7 } })).status).toBe(400);
    expect((await call("/backfills/nope/cancel", { token: admin, body: {} })).status).toBe(404);
    const dry = await call(path, { token: admin, body: { dryRun: true, reason: "wrong days" } });
    expect(dry.status, dry.text).toBe(200);
    expect(await headOf(server, admin)).toBe(before);
    expect(dry.body).toMatchObject({ backfillId: id, dryRun: true, runTasks: [] });
    expect(dry.body.targets.map((t: { task: string }) => t.task)).toEqual([EXTRACT, REPORT]);
    const real = await call(path, { token: admin, body: { reason: "wrong days" } });
    expect(real.status, real.text).toBe(200);
    const { dryRun: _, ...plan } = dry.body;
    expect(real.body).toMatchObject({ ...plan, writtenUpTo: expect.any(String) });
    const shown = await call(`/backfills/${id}`, { token: admin });
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body.cancelled).toMatchObject({
      reason: "wrong days",
      by: expect.stringMatching(/^api:admin/),
    });
    expect(shown.body.progress).toMatchObject({ cancelled: true, finished: false });
    // Its tasks hold no window now: nothing left to cancel.
    const after = await call(`/tasks/${encodeURIComponent(EXTRACT)}`, { token: admin });
    expect(after.body.task.backfill).toBeNull();
    const again = await call(path, { token: admin, body: {} });
    expect(again.status).toBe(404);
    expect(again.body.detail).toContain(`no task walks backfill ${id}`);
  });
});

describe("dryRun of a trigger and a rerun with nothing in the way", () => {
  let dir: string;
  let api: ApiProcess;
  let c: ReturnType<typeof client>;
  let token: string;
  beforeAll(async () => {
    dir = dataDir(left, "plans-clean");
    declareFile(
      dir,
      `workflows:
  - name: etl
    project: sales
    account: acme
    cron: "30 3 * * *"
    startDate: "${dayAt(-6)}"
    catchup: false
    params: { mode: full }
    tasks:
      - { name: extract, operator: { type: noop } }
      - { name: report, parents: [extract], operator: { type: noop } }
`,
    );
    token = createToken(dir, "admin", "admin");
    api = await startApi(left, dir, ["serve", "--writable"]);
    c = client(api);
  });

  it("returns the run's try, tasks and interval; the real trigger the same; a rerun of it is refused while it runs", async () => {
    const before = await headOf(api, token);
    const body = { logicalDate: dayOf(-2), params: { mode: "quick" } };
    const dry = await c("/workflows/etl/runs", { token, body: { ...body, dryRun: true } });
    expect(dry.status, dry.text).toBe(200);
    expect(await headOf(api, token)).toBe(before);
    expect(dry.body).toMatchObject({
      dryRun: true,
      runId: `etl@${at330(-2)}`,
      try: 1,
      trigger: "manual",
      params: { mode: "quick" },
      tasks: [EXTRACT, REPORT],
      intervals: [
        { task: EXTRACT, interval: at330(-2) },
        { task: REPORT, interval: at330(-2) },
      ],
    });
    const real = await c("/workflows/etl/runs", { token, body });
    expect(real.status, real.text).toBe(200);
    const { dryRun: _, ...plan } = dry.body;
    expect(real.body).toEqual(plan);
    const written = await headOf(api, token);
    expect(written).not.toBe(before);

    // (A run id takes a day too: the workflow's interval that starts on it.)
    const id = encodeURIComponent(`etl@${dayOf(-2)}`);
    for (const dryRun of [true, false]) {
      const r = await c(`/runs/${id}/rerun`, { token, body: { dryRun } });
      expect(r.status, r.text).toBe(422);
      expect(r.body.detail).toContain("is still running");
    }
    expect(await headOf(api, token)).toBe(written);
  });
});
