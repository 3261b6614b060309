import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alertStream, SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, DeadlineWatch, declare } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { silent } from "./harness.js";

/**
 * The scheduler's watch over deadlines on a real log, its clock in the test's hands: a deadline
 * that passed before the watch began raises nothing; one that passes while it watches raises
 * `deadline_missed` once, however many watches (schedulers, restarts) see it.
 */
const T = (hhmm: string) => Date.parse(`2026-11-10T${hhmm}:00.000Z`);
const TASK = "p/a/hourly/ALL";
const dirs: string[] = [];
const logs: EventLog[] = [];
afterEach(async () => {
  for (const l of logs.splice(0)) await l.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An hourly task, catch-up off, due 10 minutes after each interval, declared at 05:30. */
async function setUp() {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-deadline-"));
  dirs.push(dir);
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  logs.push(log);
  const projection = new SchedulerProjection();
  const yaml = `tasks:
  - project: p
    account: a
    name: hourly
    cron: "0 * * * *"
    startDate: "2026-11-01T00:00:00Z"
    catchup: false
    deadline: { within: "10m" }
    alerts: [{ command: "true" }]
    operator: { type: noop }
`;
  await declare(log, projection, [{ filename: "t.yaml", document: parse(yaml) }], T("05:30"));
  await catchUp(log, projection);
  return { log, projection };
}

function watchAt(log: EventLog, projection: SchedulerProjection, clock: { now: number }) {
  return new DeadlineWatch({ log, projection, now: () => clock.now, owns: () => true, logger: silent });
}

const missedOf = (interval: string) => alertStream(`deadline_missed:${TASK}@${interval}#d`);

async function settled(log: EventLog, stream: string): Promise<bigint | "no_stream"> {
  // The watch writes beside its caller: give its append a moment, then read.
  for (let i = 0; i < 50; i += 1) {
    const r = await log.streamRevision(stream);
    if (r !== "no_stream") return r;
    await new Promise((r) => setTimeout(r, 20));
  }
  return "no_stream";
}

describe("the deadline watch", () => {
  it("raises nothing for a deadline that passed before it began, and watches the next interval", async () => {
    const { log, projection } = await setUp();
    // The task stands at 04:00 (due 05:00, deadline 05:10): passed when the watch begins at 05:30.
    expect(projection.tasks.get(TASK)?.logicalDate).toBe("2026-11-10T04:00:00.000Z");
    const clock = { now: T("05:30") };
    const w = watchAt(log, projection, clock);
    w.start();
    w.check(TASK);
    expect(await settled(log, missedOf("2026-11-10T04:00:00.000Z"))).toBe("no_stream");
    expect(w.stats.raised).toBe(0);
    w.stop();
  });

  it("raises a deadline missed once, naming the cause, however many watches see it pass", async () => {
    const { log, projection } = await setUp();
    const clock = { now: T("05:30") };
    const a = watchAt(log, projection, clock);
    const b = watchAt(log, projection, clock);
    a.start();
    b.start();
    // 05:00's deadline is 06:10; the task still stands at 04:00 (nothing ran).
    clock.now = T("06:11");
    a.check(TASK);
    b.check(TASK);
    const stream = missedOf("2026-11-10T05:00:00.000Z");
    expect(await settled(log, stream)).toBe(0n);
    const [raised] = await log.readStream(stream);
    expect(raised?.type).toBe("AlertRaised");
    expect((raised?.data as { reason?: string } | undefined)?.reason).toBe(
      "10m deadline: it is ready to start",
    );
    a.stop();
    b.stop();
    // A watch begun after it (a restart) does not raise it again either.
    const c = watchAt(log, projection, clock);
    c.start();
    c.check(TASK);
    await new Promise((r) => setTimeout(r, 200));
    expect((await log.readStream(stream)).length).toBe(1);
    c.stop();
  });
});
