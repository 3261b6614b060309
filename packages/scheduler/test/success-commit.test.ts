import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  connectionStream,
  type DomainEvent,
  foldInstance,
  type InstanceState,
  instanceStream,
  intentEvent,
  SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import type { EventLog, StreamWrite } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { type AttemptReport, type RunCommand, WorkerPool } from "@chronolog/worker";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { RunSlots } from "../src/admission/run-slots.js";
import { AppendChain } from "../src/append-chain.js";
import { declare } from "../src/declare.js";
import type { Dispatcher } from "../src/dispatcher.js";
import { InFlight } from "../src/inflight.js";
import { Outbox } from "../src/outbox.js";
import { Ownership } from "../src/ownership.js";
import { catchUp } from "../src/projection-loader.js";
import { LeaseBook } from "../src/reconcile/lease-book.js";
import { Scheduler } from "../src/scheduler.js";
import { SuccessCommits } from "../src/success-commit.js";
import { LATEST, SLOT_HOUR, silent } from "./harness.js";

/**
 * The report shell writes a task's success, its advance and the intents of the children that
 * success lets start (decided by the core's decideSuccessCommit) in one atomic append; when one
 * of those intents cannot be written (its stream is not where the projection said, the log moved
 * on, the log refuses it), the success is written without them and the pass starts them instead.
 */
const OPERATOR = { type: "shell", command: "true" };

/** A first attempt's intent, as the scheduler writes it. */
const intent = (task: TaskState, token: string): DomainEvent =>
  intentEvent(task, 1, token, OPERATOR, undefined);

let dir: string;
let log: EventLog;
let projection: SchedulerProjection;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-success-commit-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  projection = new SchedulerProjection();
  const task = (name: string, parents: string) =>
    `  - { project: p, account: a, name: ${name}, parents: [${parents}], cron: "0 ${SLOT_HOUR} * * *", startDate: "${LATEST}", idempotent: true, operator: { type: shell, command: "true" } }`;
  // One due interval each, and the child waits for the parent: nothing but what a test starts runs.
  const yaml = `tasks:\n${task("parent", "")}\n${task("child", "p/a/parent/ALL")}\n`;
  await declare(log, projection, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, projection);
  // The parent's attempt is under way.
  const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
  await log.append(instanceStream(parent.key, parent.logicalDate), [intent(parent, "parent-token-1")], {
    expectedRevision: "no_stream",
  });
  await catchUp(log, projection);
});
afterEach(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A dispatcher that records what the shell hands out and tells the workers. */
function recorder() {
  const sent: RunCommand[] = [];
  const stopped: string[] = [];
  const proceeded: string[] = [];
  const dispatcher: Dispatcher = {
    dispatch: (commands) => {
      sent.push(...commands);
    },
    onReport: () => undefined,
    query: async () => new Map(),
    cancel: (token) => stopped.push(token),
    proceed: (token) => proceeded.push(token),
  };
  return { dispatcher, sent, stopped, proceeded };
}

/** The report shell on this test's log and projection, with its parts. */
function shell(o: { newToken?: () => string } = {}) {
  const errors: unknown[] = [];
  const logger = { ...silent, error: (obj: object) => errors.push(obj) };
  const rec = recorder();
  const ownership = new Ownership(projection, undefined);
  const stats = { dispatched: 0 };
  const parts = {
    log,
    projection,
    runSlots: new RunSlots({ wakeWaiters: () => {} }),
    inflight: new InFlight(),
    leases: new LeaseBook(),
    outbox: new Outbox(rec.dispatcher, ownership, logger, undefined, stats),
    ownership,
    agenda: { halted: false },
    now: Date.now,
    random: Math.random,
    newToken: o.newToken ?? (() => `child-token-${Math.random().toString(36).slice(2)}`),
    logger,
    chain: new AppendChain(),
  };
  return { commits: new SuccessCommits(parts), parts, errors, ...rec };
}

/** The parent's attempt succeeds: its report goes through the shell, which is then idle. */
async function succeedParent(s: ReturnType<typeof shell>): Promise<void> {
  const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
  s.commits.submit({
    kind: "succeeded",
    token: "parent-token-1",
    attempt: 1,
    instanceStream: instanceStream(parent.key, parent.logicalDate),
    workerId: "w1",
    at: new Date().toISOString(),
    durationMs: 5,
    exitCode: 0,
    stdoutTail: "",
    stderrTail: "",
  });
  await s.commits.idle();
  expect(s.errors).toEqual([]);
}

/** Counts the appends made with an expected head, running `meanwhile` before each of the first `times`. */
function beforeEachHeadAppend(times: number, meanwhile: () => Promise<void>): { calls: number } {
  const seen = { calls: 0 };
  const appendMany = log.appendMany.bind(log);
  log.appendMany = async (writes, options) => {
    if (options?.expectedHead !== undefined) {
      seen.calls += 1;
      if (seen.calls <= times) await meanwhile();
    }
    return appendMany(writes, options);
  };
  return seen;
}

let notes = 0;
/** Another process writes to the log (a note), and this projection sees it. */
async function somethingElseWritten(): Promise<void> {
  notes += 1;
  await log.append(`note-${notes}`, [{ type: "Note", data: { text: "meanwhile" } }], {
    expectedRevision: "no_stream",
  });
  await catchUp(log, projection);
}

/** The parent's success and advance were written, and nothing went to the child's stream but `there`. */
async function expectSuccessAlone(childStream: string, there: string[] = []): Promise<void> {
  const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
  const parentEvents = await log.readStream(instanceStream(parent.key, parent.logicalDate));
  expect(parentEvents.map((e) => e.type)).toEqual(["DispatchIntended", "AttemptSucceeded"]);
  const advanced = await log.readStream(taskStream(parent.key), { fromRevision: parent.revision + 1n });
  expect(advanced.map((e) => e.type)).toEqual(["IntervalCompleted"]);
  const childEvents = await log.readStream(childStream);
  expect(childEvents.map((e) => (e.data as { token: string }).token)).toEqual(there);
}

const childStreamOf = () => {
  const child = projection.tasks.get("p/a/child/ALL") as TaskState;
  return instanceStream(child.key, child.logicalDate);
};

describe("a success and the children it starts", () => {
  it("are one atomic append: the child's intent right after the parent's advance, then sent", async () => {
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const s = shell();
    await succeedParent(s);
    const [succeeded] = (await log.readStream(instanceStream(parent.key, parent.logicalDate))).slice(-1);
    const [advanced] = await log.readStream(taskStream(parent.key), { fromRevision: parent.revision + 1n });
    const [intended] = await log.readStream(childStreamOf());
    expect(succeeded?.type).toBe("AttemptSucceeded");
    expect(advanced?.type).toBe("IntervalCompleted");
    expect(intended?.type).toBe("DispatchIntended");
    expect([succeeded?.position, advanced?.position, intended?.position]).toEqual([
      (succeeded?.position ?? 0n) + 0n,
      (succeeded?.position ?? 0n) + 1n,
      (succeeded?.position ?? 0n) + 2n,
    ]);
    expect(new Set([succeeded, advanced, intended].map((e) => e?.metadata.recordedAt)).size).toBe(1);
    // Sent once durable, with the token of its intent; in flight until the projection shows it.
    expect(s.sent.map((c) => c.token)).toEqual([(intended?.data as { token?: string } | undefined)?.token]);
    expect(s.parts.inflight.settled("p/a/child/ALL", (intended?.position ?? 0n) - 1n)).toBe(false);
  });

  it("when the child's stream already exists, the success is written without it and nothing is sent", async () => {
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    // Someone else started the child meanwhile (this projection has not seen it).
    await log.append(childStreamOf(), [intent(child, "elsewhere-token")], { expectedRevision: "no_stream" });
    const s = shell();
    await succeedParent(s);
    await expectSuccessAlone(childStreamOf(), ["elsewhere-token"]);
    expect(s.sent).toEqual([]);
    // The child is the pass's again.
    expect(s.parts.inflight.has(child.id)).toBe(false);
  });

  it("when the log moved on since the children were decided, they are decided again and go with it", async () => {
    const seen = beforeEachHeadAppend(1, somethingElseWritten);
    const s = shell();
    await succeedParent(s);
    expect(seen.calls).toBe(2);
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const [ended] = (await log.readStream(instanceStream(parent.key, parent.logicalDate))).slice(-1);
    const [intended] = await log.readStream(childStreamOf());
    expect(ended?.type).toBe("AttemptSucceeded");
    expect(intended?.type).toBe("DispatchIntended");
    expect(intended?.metadata.recordedAt).toBe(ended?.metadata.recordedAt);
    expect(s.sent).toHaveLength(1);
  });

  it("when the log keeps moving on, the children are decided three times, then left to the pass", async () => {
    const seen = beforeEachHeadAppend(Number.POSITIVE_INFINITY, somethingElseWritten);
    const s = shell();
    await succeedParent(s);
    expect(seen.calls).toBe(3);
    await expectSuccessAlone(childStreamOf());
    expect(s.sent).toEqual([]);
  });

  it("when the log refuses what goes with the success, the success is written without it", async () => {
    // An intent the log does not take (its token is too short): the whole append is refused.
    const s = shell({ newToken: () => "short" });
    await succeedParent(s);
    await expectSuccessAlone(childStreamOf());
    expect(s.sent).toEqual([]);
  });

  it("when the parent's task moved meanwhile, the attempt is written alone, with no child", async () => {
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    // The task stream moves on behind this projection's back (a pause, here).
    await log.append(taskStream(parent.key), [{ type: "TaskPaused", data: { key: parent.key } }], {
      expectedRevision: parent.revision,
    });
    const s = shell();
    await succeedParent(s);
    const parentEvents = await log.readStream(instanceStream(parent.key, parent.logicalDate));
    expect(parentEvents.map((e) => e.type)).toEqual(["DispatchIntended", "AttemptSucceeded"]);
    expect(await log.readStream(taskStream(parent.key), { fromRevision: parent.revision + 2n })).toEqual([]);
    expect(await log.readStream(childStreamOf())).toEqual([]);
  });
});

describe("heartbeats", () => {
  const heartbeat = (token: string): AttemptReport => {
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    return {
      kind: "heartbeat",
      token,
      attempt: 1,
      instanceStream: instanceStream(parent.key, parent.logicalDate),
      workerId: "w1",
      at: new Date().toISOString(),
    };
  };

  it("renew the lease of the running attempt through the report decider, writing nothing", async () => {
    const s = shell();
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const stream = instanceStream(parent.key, parent.logicalDate);
    const settled = s.commits.submit({ ...heartbeat("parent-token-1"), kind: "started", pid: 1 });
    await s.commits.idle();
    // Written: nothing told to stop.
    expect([...(await settled).stopped]).toEqual([]);
    await catchUp(log, projection);
    const before = await log.headPosition();
    const from = Date.now();
    s.commits.submit(heartbeat("parent-token-1"));
    await s.commits.idle();
    expect(await log.headPosition()).toBe(before);
    expect(s.parts.leases.peek("parent-token-1")).toBeGreaterThanOrEqual(from + 30_000);
    expect((await log.readStream(stream)).map((e) => e.type)).toEqual(["DispatchIntended", "AttemptStarted"]);
  });

  it("of an attempt that is not current are recorded as rejected, and the worker told to stop", async () => {
    const s = shell();
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const settled = s.commits.submit(heartbeat("stale-token-9"));
    await s.commits.idle();
    const events = await log.readStream(instanceStream(parent.key, parent.logicalDate));
    expect(events.map((e) => e.type)).toEqual(["DispatchIntended", "CompletionRejected"]);
    expect(s.stopped).toEqual(["stale-token-9"]);
    // What the commit settles to says so too (a remote worker's start is then refused in its answer).
    expect([...(await settled).stopped]).toEqual(["stale-token-9"]);
    expect(s.parts.leases.peek("stale-token-9")).toBeUndefined();
  });
});

/** Declares `tasks` (beside the parent), runs a scheduler and one worker, and hands it the parent's attempt. */
async function withScheduler(
  tasks: string,
  body: (ctx: {
    scheduler: Scheduler;
    date: string;
    ended: (names: string[]) => Promise<InstanceState[]>;
  }) => Promise<void>,
): Promise<void> {
  const declared = await declare(
    log,
    projection,
    [{ filename: "more.yaml", document: parse(tasks) }],
    Date.now(),
  );
  expect(declared.tasks.every((t) => t.outcome === "declared")).toBe(true);
  await catchUp(log, projection);
  const pool = new WorkerPool({ size: 1, capacity: 8 });
  await pool.ready();
  const scheduler = new Scheduler({ log, projection, dispatcher: pool, logger: silent });
  try {
    await scheduler.start();
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    pool.dispatch([
      {
        kind: "run",
        instanceStream: instanceStream(parent.key, parent.logicalDate),
        taskKey: parent.id,
        logicalDate: parent.logicalDate,
        attempt: 1,
        token: "parent-token-1",
        operator: OPERATOR,
        leaseSeconds: 30,
      },
    ]);
    // Every task here has the same first interval as the parent.
    const date = parent.logicalDate;
    // Finished instances leave memory: they are read back from the log.
    const endedOne = async (name: string) => {
      const t = projection.tasks.get(`p/a/${name}/ALL`) as TaskState;
      const inst = foldInstance(await log.readStream(instanceStream(t.key, date)));
      return inst && inst.status !== "queued" && inst.status !== "running" ? inst : undefined;
    };
    const ended = async (names: string[]): Promise<InstanceState[]> => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const all = await Promise.all(names.map(endedOne));
        if (all.every(Boolean)) return all as InstanceState[];
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${names.join(", ")} to end`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await body({ scheduler, date, ended });
  } finally {
    await scheduler.stop();
    await pool.close(500);
  }
}

function taskLine(name: string, parent: string, extra = "", command = "true"): string {
  return `  - { project: p, account: a, name: ${name}, parents: [p/a/${parent}/ALL], cron: "0 ${SLOT_HOUR} * * *", startDate: "${LATEST}", idempotent: true, operator: { type: shell, command: "${command}" }${extra} }`;
}

describe("a scheduler starting children with their parent's success", () => {
  it("dispatches a chain of tasks of no workflow one commit after each parent's end; a child on a connection goes through the pass", async () => {
    const yaml = `connections:
  - { name: db, operators: [shell], maxParallelism: 1 }
tasks:
${[taskLine("b", "parent", "", "sleep 0.2"), taskLine("c", "b"), taskLine("d", "b", ", connection: db")].join("\n")}
`;
    await withScheduler(yaml, async ({ date, ended }) => {
      const [p, b, c, d] = await ended(["parent", "b", "c", "d"]);
      expect([p, b, c, d].map((i) => i?.status)).toEqual(["success", "success", "success", "success"]);
      const end = (i: InstanceState | undefined) => i?.attempts.at(-1)?.endedAt;
      const intended = (i: InstanceState | undefined) => i?.attempts.at(-1)?.intendedAt;
      // b is dispatched in the commit of the parent's success, c in b's. (b takes a while, so that
      // nothing else is written when it ends: a success that coincides with other writes leaves
      // its children to the pass.)
      expect(intended(b)).toBe(end(p));
      expect(intended(c)).toBe(end(b));
      // d takes a slot on its connection: its intent is written by the pass, with its slot.
      const dStream = instanceStream((projection.tasks.get("p/a/d/ALL") as TaskState).key, date);
      const dEvents = await log.readStream(dStream);
      const takes = await log.readStream(connectionStream("db"));
      expect(dEvents[0]?.type).toBe("DispatchIntended");
      expect(takes.find((e) => e.type === "ConnectionSlotsTaken")?.position).toBe(
        (dEvents[0]?.position ?? 0n) + 1n,
      );
    });
  }, 30_000);

  it("starts at most 32 children with a success; the pass starts the rest", async () => {
    const names = Array.from({ length: 40 }, (_, i) => `fan_${i}`);
    const appendMany = log.appendMany.bind(log);
    const appends: Array<readonly StreamWrite[]> = [];
    log.appendMany = (writes) => {
      appends.push(writes);
      return appendMany(writes);
    };
    await withScheduler(
      `tasks:\n${names.map((n) => taskLine(n, "parent")).join("\n")}\n`,
      async ({ ended }) => {
        const children = await ended(names);
        expect(children.every((i) => i.status === "success")).toBe(true);
        const withSuccess = appends.find((w) => w[0]?.events.some((e) => e.type === "AttemptSucceeded"));
        // (The parent has 41 children: the 40 here and the one every test has.)
        expect(withSuccess?.slice(2).map((w) => w.events[0]?.type)).toEqual(
          Array(32).fill("DispatchIntended"),
        );
      },
    );
  }, 30_000);
});
