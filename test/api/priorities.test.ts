import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiProcess,
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
 * Priorities through the HTTP API: a task shows its priority, rule, weight and how its current
 * interval competes; POST /backfills takes a `priority` (refused out of bounds, writing nothing),
 * records it on the backfill's events, and GET /backfills/{id} and the task show it.
 */
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let admin: string;

const dayOf = (n: number) => dayAt(n).slice(0, 10);
const EXTRACT = "sales/acme/extract/ALL";

beforeAll(async () => {
  const dir = dataDir(left, "priorities");
  declareFile(
    dir,
    `workflows:
  - name: etl
    project: sales
    account: acme
    cron: "30 3 * * *"
    startDate: "${dayAt(-6)}"
    catchup: false
    priority: 3
    tasks:
      - { name: extract, priorityRule: downstream, operator: { type: noop } }
      - { name: report, parents: [extract], priority: 4, operator: { type: noop } }
`,
  );
  admin = createToken(dir, "admin", "admin");
  server = await startApi(left, dir, ["serve", "--writable"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("priorities through the API", () => {
  it("GET /tasks/{key}: the priority inherited, the rule, the downstream weight and the claim", async () => {
    const t = await call(`/tasks/${key(EXTRACT)}`, { token: admin });
    expect(t.status, t.text).toBe(200);
    expect(t.body.task.spec).toMatchObject({ priority: 3, priorityRule: "downstream" });
    expect(t.body.priority).toEqual({
      priority: 3,
      rule: "downstream",
      weight: 7,
      claim: { backfill: false, weight: 7 },
    });
  });

  it("POST /backfills: a priority out of bounds is refused and writes nothing; one in bounds is recorded and shown", async () => {
    const body = { task: "sales/acme/extract", from: dayOf(-5), to: dayOf(-4) };
    const before = await headOf(server, admin);
    const bad = await call("/backfills", { token: admin, body: { ...body, priority: 5000 } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("a priority is an integer from -1000 to 1000");
    expect(await headOf(server, admin)).toBe(before);

    const real = await call("/backfills", { token: admin, body: { ...body, priority: -20 } });
    expect(real.status, real.text).toBe(200);
    expect(real.body.priority).toBe(-20);
    const id = real.body.targets[0].backfillId as string;

    const shown = await call(`/backfills/${id}`, { token: admin });
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body.priority).toBe(-20);
    const history = await call(`/tasks/${key(EXTRACT)}/history`, { token: admin });
    const reset = (history.body as Array<{ type: string; data: Record<string, unknown> }>).find(
      (e) => e.type === "IntervalReset",
    );
    expect(reset?.data).toMatchObject({ reason: "backfill", backfillId: id, priority: -20 });
    const t = await call(`/tasks/${key(EXTRACT)}`, { token: admin });
    expect(t.body.priority.claim).toEqual({ backfill: false, weight: -20 });
  });
});
