import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProjection, ValidationError } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare } from "@chronolog/scheduler";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * A task of a workflow leaves it only by a declaration of that workflow without it: another
 * workflow's declaration, or the task declared alone, is refused (it would leave the workflow,
 * perhaps another project's, naming a task it no longer holds), on a real SQLite log.
 */
const NOW = Date.parse("2026-11-30T10:00:00.000Z");
let dir: string;
let log: EventLog;
let projection: SchedulerProjection;

const workflow = (name: string, project: string, tasks: object[]) => ({
  name,
  project,
  account: "acme",
  cron: "0 2 * * *",
  startDate: "2026-11-01T00:00:00Z",
  tasks,
});
const s1 = { name: "s1", operator: { type: "noop" } };
const s2 = { name: "s2", project: "ingest", operator: { type: "noop" } };
const file = (document: object) => [{ filename: "f.json", document }];
/** A task of the workflow declared alone, outside any workflow. */
const alone = (project: string, name: string) => ({
  project,
  account: "acme",
  name,
  cron: "0 2 * * *",
  startDate: "2026-11-01T00:00:00Z",
  operator: { type: "noop" },
});

async function refusal(document: object, visible?: (project: string) => boolean): Promise<string> {
  await catchUp(log, projection);
  const head = projection.position;
  const error = await declare(log, projection, file(document), NOW, visible ? { visible } : {}).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  await catchUp(log, projection);
  expect(projection.position).toBe(head);
  return (error as Error).message;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-workflow-move-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  projection = new SchedulerProjection();
  await declare(log, projection, file({ workflows: [workflow("sw", "sales", [s1, s2])] }), NOW);
});
afterEach(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a task of a workflow declared elsewhere", () => {
  it("is refused in another workflow's declaration, naming its workflow, and nothing is written", async () => {
    expect(
      await refusal({ workflows: [workflow("iw", "ingest", [{ ...s2, project: undefined }])] }),
    ).toContain(
      'ingest/acme/s2/ALL is a task of workflow "sw": to move it into workflow "iw", declare "sw" without it in the same declaration',
    );
  });

  it("is refused declared alone", async () => {
    expect(await refusal({ tasks: [alone("ingest", "s2")] })).toContain(
      'ingest/acme/s2/ALL is a task of workflow "sw": to move it out of it, declare "sw" without it in the same declaration',
    );
  });

  it("is named with its workflow to a producer that reads the workflow's project", async () => {
    expect(await refusal({ tasks: [alone("sales", "s1")] }, (p) => p === "sales")).toContain(
      'sales/acme/s1/ALL is a task of workflow "sw": to move it out of it, declare "sw" without it in the same declaration',
    );
  });

  it("moves with its workflow declared without it in the same declaration", async () => {
    await declare(
      log,
      projection,
      file({
        workflows: [workflow("sw", "sales", [s1]), workflow("iw", "ingest", [{ ...s2, project: undefined }])],
      }),
      NOW,
    );
    await catchUp(log, projection);
    expect(projection.tasks.get("ingest/acme/s2/ALL")?.spec.workflow).toBe("iw");
    expect(projection.tasks.get("ingest/acme/s2/ALL")?.status).not.toBe("retired");
    expect(projection.tasks.get("sales/acme/s1/ALL")?.spec.workflow).toBe("sw");
  });
});
