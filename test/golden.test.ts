import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readTokens } from "@chronolog/api/tokens";
import {
  currentSchemaVersion,
  eventCatalog,
  formatTaskKey,
  isEventType,
  SchedulerProjection,
  type ValidationError,
  validateEventData,
} from "@chronolog/core";
import {
  decodeStoredEvent,
  EventLog,
  ExportBackend,
  GENESIS_HASH,
  hashStored,
  parseExport,
  type StoredEvent,
  verifyExportText,
} from "@chronolog/log";
import { ladderRungs, projectionAsOf, rebuildWithLadder } from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import { chronolog } from "./support/cli.js";

/**
 * A log recorded by an earlier version of Chronolog (`chronolog up --example` plus a flaky and a
 * failing task, a pause, a backfill), replayed through the current code: every event must still
 * decode, the hash chain must still verify, and the projection must fold to the same state.
 */
const lines = readFileSync(
  fileURLToPath(new URL("./fixtures/golden-embedded-v1.jsonl", import.meta.url)),
  "utf8",
)
  .split("\n")
  .filter(Boolean)
  .map((l) => {
    const raw = JSON.parse(l) as Omit<StoredEvent, "revision" | "position"> & {
      revision: string;
      position: string;
    };
    return { ...raw, revision: BigInt(raw.revision), position: BigInt(raw.position) } as StoredEvent;
  });

describe("golden log: an embedded log recorded by an earlier version", () => {
  it("verifies its hash chain with today's code", () => {
    let prev = GENESIS_HASH;
    for (const e of lines) {
      expect(e.metadata.prevHash, `position ${e.position}`).toBe(prev);
      const hash = hashStored(prev, e);
      expect(hash, `position ${e.position}`).toBe(e.metadata.hash);
      prev = hash;
    }
  });

  it("decodes every event and folds to the state it had", () => {
    const projection = new SchedulerProjection();
    for (const e of lines) projection.apply(decodeStoredEvent(e));
    const task = (id: string) => projection.tasks.get(id);
    expect(projection.tasks.size).toBe(5);
    expect(task("ingest/acme/orders_raw/ALL")?.prevIntervalStart).toBe("2026-11-29T19:00:00.000Z");
    expect(task("ingest/acme/orders_raw/ALL")?.backfill).toBeNull();
    expect(task("ops/acme/flaky/ALL")).toMatchObject({
      status: "active",
      prevIntervalStart: "2026-11-29T19:00:00.000Z",
    });
    expect(task("ops/acme/doomed/ALL")?.failure).toMatchObject({
      logicalDate: "2026-11-29T12:00:00.000Z",
      state: "failed",
    });
    expect(task("sales/acme/orders_enriched/ALL")?.prevIntervalStart).toBe("2026-11-28T02:00:00.000Z");
    expect(task("sales/acme/orders_daily_report/ALL")?.logicalDate).toBe("2026-11-29T02:00:00.000Z");
    const runs = [...projection.runs.values()];
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => r.status === "success")).toBe(true);
    expect(projection.connections.get("warehouse")?.maxParallelism).toBe(2);
    // Only the failed interval is still held in memory: everything else is history.
    expect([...projection.instances.values()].map((i) => i.status)).toEqual(["failed"]);
  });
});

/**
 * A longer log, recorded by `node test/fixtures/record-golden.mjs` (it says what it does, and
 * records a v3 the same way): tasks in three projects with a cross-project parent, a workflow
 * whose middle task fails once and succeeds on its retry, a task that fails for good and raises
 * an alert, a pause and a resume, a backfill, a rerun, a trigger with a param, a SIGKILL of
 * `chronolog up` mid-run and its recovery, an access token and a Note. The fixture is the log's
 * export (`chronolog log export`), so `log verify --file` reads it as it is.
 */
const V2 = fileURLToPath(new URL("./fixtures/golden-embedded-v2.jsonl", import.meta.url));
const v2Text = readFileSync(V2, "utf8");
const v2 = parseExport(v2Text);
/** The head, and positions where the history turns: see the test of the state as of them. */
const V2_HEAD = 371n;
const V2_POSITIONS = [10n, 11n, 29n, 30n, 153n, 172n, 317n, 318n, 319n, 332n, 352n];
const v2Log = () => new EventLog(new ExportBackend(v2, "the golden export"));

const stateOf = (p: SchedulerProjection) =>
  JSON.stringify(p.toSnapshot(), (_k, v) => (typeof v === "bigint" ? v.toString() : v));

/** The fold of the first events of the log, up to and with `position`. */
function foldedTo(position: bigint): SchedulerProjection {
  const p = new SchedulerProjection();
  for (const e of v2) if (e.position <= position) p.apply(decodeStoredEvent(e));
  return p;
}

describe("golden log v2: a longer embedded log, as exported", () => {
  it("verifies its hash chain with today's code", () => {
    let prev = GENESIS_HASH;
    for (const e of v2) {
      expect(e.metadata.prevHash, `position ${e.position}`).toBe(prev);
      const hash = hashStored(prev, e);
      expect(hash, `position ${e.position}`).toBe(e.metadata.hash);
      prev = hash;
    }
    const { result } = verifyExportText(v2Text);
    expect(result.break).toBeNull();
    expect(result.checked).toBe(v2.length);
    expect(result.startHash).toBe(GENESIS_HASH);
  });

  it("decodes every event, of every kind it was recorded with", () => {
    const types = new Set(v2.map((e) => decodeStoredEvent(e).type));
    for (const t of [
      "ConnectionDeclared",
      "WorkflowDeclared",
      "TaskDeclared",
      "Note",
      "AccessTokenIssued",
      "DispatchIntended",
      "AttemptStarted",
      "AttemptSucceeded",
      "AttemptFailed",
      "AttemptAbandoned",
      "IntervalCompleted",
      "IntervalFailed",
      "IntervalReset",
      "AlertRaised",
      "AlertDelivered",
      "RunStarted",
      "RunFinished",
      "ConnectionSlotsTaken",
      "TaskPaused",
      "TaskResumed",
    ])
      expect(types, t).toContain(t);
  });

  it("validates every recorded event's data as it was written, the generated parser as the general one", () => {
    let checked = 0;
    for (const e of v2) {
      if (!isEventType(e.type) || e.metadata.schemaVersion !== currentSchemaVersion(e.type)) continue;
      const data = JSON.parse(e.dataJson) as Record<string, unknown>;
      const general = eventCatalog[e.type].schema;
      // Data stored after validation validates to itself, field for field and in the same order.
      expect(JSON.stringify(validateEventData(e.type, data)), `position ${e.position}`).toBe(e.dataJson);
      expect(JSON.stringify(general.parse(data)), `position ${e.position}`).toBe(e.dataJson);
      // And a field no schema has is refused by both, with the same words.
      const refusal = (() => {
        try {
          validateEventData(e.type, { ...data, bogus: 1 });
        } catch (error) {
          return (error as ValidationError).issues;
        }
      })();
      const expected = general.safeParse({ ...data, bogus: 1 }).error?.issues;
      // A note takes any field.
      if (e.type === "Note") expect(refusal).toBeUndefined();
      else expect(refusal?.map((i) => i.message)).toEqual(expected?.map((i) => i.message));
      checked += 1;
    }
    expect(checked).toBeGreaterThan(300);
  });

  it("folds to the state it had", async () => {
    const projection = foldedTo(V2_HEAD);
    expect(projection.position).toBe(V2_HEAD);
    const task = (id: string) => projection.tasks.get(id);
    expect([...projection.tasks.keys()].sort()).toEqual([
      "ingest/acme/raw/ALL",
      "ops/acme/doomed/ALL",
      "ops/acme/slow/ALL",
      "ops/acme/ticker/ALL",
      "sales/acme/enrich/ALL",
      "sales/acme/flaky/ALL",
      "sales/acme/report/ALL",
    ]);
    for (const id of [
      "ingest/acme/raw/ALL",
      "sales/acme/enrich/ALL",
      "sales/acme/flaky/ALL",
      "ops/acme/slow/ALL",
    ])
      expect(task(id), id).toMatchObject({
        status: "active",
        logicalDate: "2026-12-01T14:00:00.000Z",
        prevIntervalStart: "2026-12-01T13:00:00.000Z",
        backfill: null,
        failure: null,
      });
    expect(task("ingest/acme/raw/ALL")?.revision).toBe(13n);
    expect(task("sales/acme/report/ALL")?.prevIntervalStart).toBe("2026-12-01T13:00:00.000Z");
    // Paused and resumed: it ran on to the hour it was recorded in.
    expect(task("ops/acme/ticker/ALL")).toMatchObject({
      status: "active",
      logicalDate: "2026-12-01T15:00:00.000Z",
      prevIntervalStart: "2026-12-01T14:00:00.000Z",
    });
    expect(task("sales/acme/enrich/ALL")?.parents).toEqual([
      { project: "ingest", account: "acme", name: "raw", partition: "ALL" },
    ]);
    // The task that failed for good: its interval is the only one still held.
    expect(task("ops/acme/doomed/ALL")?.failure).toEqual({
      logicalDate: "2026-12-01T13:00:00.000Z",
      state: "failed",
      reason: "exited with code 3",
    });
    expect([...projection.instances.values()].map((i) => [formatTaskKey(i.key), i.status])).toEqual([
      ["ops/acme/doomed/ALL", "failed"],
    ]);
    const runs = [...projection.runs.values()]
      .map((r) => [r.runId, r.status, r.try, r.trigger, r.params])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(runs).toEqual([
      ["orders@2026-12-01T10:00:00.000Z", "success", 1, "manual", { mode: "quick" }],
      ["orders@2026-12-01T12:00:00.000Z", "success", 2, "rerun", { mode: "full" }],
      ["orders@2026-12-01T13:00:00.000Z", "success", 1, "schedule", { mode: "full" }],
    ]);
    expect(
      [...projection.alerts.values()].map((a) => [a.raised.kind, a.sinks.map((s) => s.delivered)]),
    ).toEqual([["task_failed", [true]]]);
    expect(projection.connections.get("warehouse")?.maxParallelism).toBe(2);
    const tokens = await readTokens(v2Log());
    expect(tokens.list().map((t) => [t.name, t.scope, t.projects, t.revokedAt])).toEqual([
      ["auditor", "read", ["sales"], null],
    ]);
    const note = v2.find((e) => e.type === "Note");
    expect(note && JSON.parse(note.dataJson)).toEqual({ text: "recording a golden log" });
  });

  it("the state as of a position is the fold of the log up to it, with or without a ladder", async () => {
    const log = v2Log();
    const ladder = mkdtempSync(join(tmpdir(), "chronolog-golden-"));
    try {
      await rebuildWithLadder(log, ladder, { spacing: 40n });
      expect(ladderRungs(ladder).length).toBeGreaterThan(3);
      const head = V2_HEAD;
      const at = [0n, 1n, 2n, 39n, 40n, 41n, head / 3n, head / 2n, head - 1n, head, ...V2_POSITIONS];
      for (const p of at) {
        const expected = stateOf(foldedTo(p));
        const fromLadder = await projectionAsOf(log, ladder, p);
        expect(stateOf(fromLadder.projection), `position ${p}, from the ladder`).toBe(expected);
        const alone = await projectionAsOf(log, null, p);
        expect(alone.fromSnapshot).toBe(-1n);
        expect(stateOf(alone.projection), `position ${p}, from the start`).toBe(expected);
      }
      const asOf = async (p: bigint) => (await projectionAsOf(log, ladder, p)).projection;
      const ticker = "ops/acme/ticker/ALL";
      // The doomed task halts at 29; the flaky task's first attempt fails at 153 and it retries.
      expect((await asOf(28n)).tasks.get("ops/acme/doomed/ALL")?.failure).toBeNull();
      expect((await asOf(29n)).tasks.get("ops/acme/doomed/ALL")?.failure?.state).toBe("failed");
      const flaky = "instance-sales/acme/flaky/ALL@2026-12-01T12:00:00.000Z";
      expect((await asOf(153n)).instances.get(flaky)?.status).toBe("retry_wait");
      // The ticker is paused at 317 and resumed at 318; the backfill sets the task back at 319.
      expect((await asOf(317n)).tasks.get(ticker)?.status).toBe("paused");
      expect((await asOf(318n)).tasks.get(ticker)?.status).toBe("active");
      expect((await asOf(319n)).tasks.get("ingest/acme/raw/ALL")).toMatchObject({
        logicalDate: "2026-12-01T05:00:00.000Z",
        backfill: { until: "2026-12-01T07:00:00.000Z" },
      });
      // The rerun's second try is running at 332 and done at 351.
      expect((await asOf(332n)).runs.get("orders@2026-12-01T12:00:00.000Z")).toMatchObject({
        status: "running",
        try: 2,
      });
      expect((await asOf(351n)).runs.get("orders@2026-12-01T12:00:00.000Z")?.status).toBe("success");
    } finally {
      rmSync(ladder, { recursive: true, force: true });
    }
  });

  it("passes `log verify --file`, and one byte changed fails at its position", () => {
    const dir = mkdtempSync(join(tmpdir(), "chronolog-golden-"));
    try {
      const ok = chronolog(dir, ["log", "verify", "--file", V2]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain(`ok: ${v2.length} events verified, head at position ${V2_HEAD}`);
      // One byte of the note's text.
      const note = v2.find((e) => e.type === "Note") as StoredEvent;
      const at = v2Text.indexOf("recording a golden log");
      const file = join(dir, "changed.jsonl");
      writeFileSync(file, `${v2Text.slice(0, at)}R${v2Text.slice(at + 1)}`);
      const changed = chronolog(dir, ["log", "verify", "--file", file]);
      expect(changed.code).toBe(5);
      expect(changed.stdout).toContain(
        `chain broken at line ${note.position}, position ${note.position}: the event's content does not match its hash`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
