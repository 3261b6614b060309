import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  connectionStream,
  type DomainEvent,
  type DomainEventOf,
  type InstanceState,
  instanceStream,
  SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import type { AppendResult, EventLog, StreamWrite } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { WorkerPool } from "@chronolog/worker";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { declare } from "../src/declare.js";
import { catchUp } from "../src/projection-loader.js";
import { type Alongside, foldInstance, ReportApplier } from "../src/reports.js";
import { Scheduler } from "../src/scheduler.js";
import { LATEST, SLOT_HOUR, silent } from "./harness.js";

/**
 * The report applier writes a task's success, its advance and the intents the scheduler asks
 * for alongside (the children that success lets start) in one atomic append; when one of those
 * intents cannot be written (its stream is not where the scheduler thought), the success is
 * written without them and the scheduler is told, so that its pass starts the children instead.
 */
const OPERATOR = { type: "shell", command: "true" };

function intent(task: TaskState, token: string): DomainEvent {
  return {
    type: "DispatchIntended",
    data: {
      key: task.key,
      logicalDate: task.logicalDate,
      attempt: 1,
      token,
      operator: OPERATOR,
      idempotent: true,
      leaseSeconds: 30,
    },
  };
}

let dir: string;
let log: EventLog;
let projection: SchedulerProjection;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-alongside-"));
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

/**
 * Applies the parent's success, asking for `writes` alongside, decided at `decidedAt` (by
 * default the log's head as it is then; a list gives the position of each decision in turn);
 * returns what settle was given.
 */
async function succeedParent(
  writes: StreamWrite[],
  decidedAt?: bigint | readonly (bigint | undefined)[],
): Promise<{
  settled: Array<readonly AppendResult[] | null>;
  asked: Array<DomainEventOf<"IntervalCompleted">>;
}> {
  const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
  const settled: Array<readonly AppendResult[] | null> = [];
  const asked: Array<DomainEventOf<"IntervalCompleted">> = [];
  const errors: unknown[] = [];
  const positions = Array.isArray(decidedAt) ? [...decidedAt] : [decidedAt];
  const applier = new ReportApplier({
    log,
    projection,
    now: Date.now,
    random: Math.random,
    onError: (error) => errors.push(error),
    alongside: async (task, completed): Promise<Alongside> => {
      expect(task.id).toBe(parent.id);
      asked.push(completed);
      const at = positions.length > 1 ? positions.shift() : positions[0];
      const expectedHead = at ?? (await log.headPosition());
      return { writes, expectedHead, settle: (results) => settled.push(results) };
    },
  });
  applier.submit({
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
  await applier.idle();
  expect(errors).toEqual([]);
  return { settled, asked };
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

describe("a success and what is written alongside it", () => {
  it("are one atomic append: the child's intent right after the parent's advance, same commit", async () => {
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    const childStream = instanceStream(child.key, child.logicalDate);
    const { settled, asked } = await succeedParent([
      { streamId: childStream, events: [intent(child, "child-token-1")], expectedRevision: "no_stream" },
    ]);
    expect(asked.map((e) => e.data.logicalDate)).toEqual([parent.logicalDate]);
    expect(settled).toHaveLength(1);
    const [results] = settled;
    expect(results).toHaveLength(1);
    const [succeeded] = (await log.readStream(instanceStream(parent.key, parent.logicalDate))).slice(-1);
    const [advanced] = await log.readStream(taskStream(parent.key), { fromRevision: parent.revision + 1n });
    const [intended] = await log.readStream(childStream);
    expect(succeeded?.type).toBe("AttemptSucceeded");
    expect(advanced?.type).toBe("IntervalCompleted");
    expect(intended?.type).toBe("DispatchIntended");
    expect(results?.[0]?.position).toBe(intended?.position);
    expect([succeeded?.position, advanced?.position, intended?.position]).toEqual([
      (succeeded?.position ?? 0n) + 0n,
      (succeeded?.position ?? 0n) + 1n,
      (succeeded?.position ?? 0n) + 2n,
    ]);
    expect(new Set([succeeded, advanced, intended].map((e) => e?.metadata.recordedAt)).size).toBe(1);
  });

  it("when an intent's stream already exists, the success is written without it and the scheduler is told", async () => {
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    const childStream = instanceStream(child.key, child.logicalDate);
    // Someone else started the child meanwhile (this projection has not seen it).
    await log.append(childStream, [intent(child, "elsewhere-token")], { expectedRevision: "no_stream" });
    const { settled } = await succeedParent([
      { streamId: childStream, events: [intent(child, "child-token-1")], expectedRevision: "no_stream" },
    ]);
    expect(settled).toEqual([null]);
    // The parent's success and advance are written all the same; the child's stream is untouched.
    await expectSuccessAlone(childStream, ["elsewhere-token"]);
  });

  it("when the log moved on since the children were decided, the success is written without them", async () => {
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    const childStream = instanceStream(child.key, child.logicalDate);
    const decidedAt = projection.position;
    // Written after the children were decided (a pause of the child, from another process).
    await log.append(taskStream(child.key), [{ type: "TaskPaused", data: { key: child.key } }], {
      expectedRevision: child.revision,
    });
    const { settled, asked } = await succeedParent(
      [{ streamId: childStream, events: [intent(child, "child-token-1")], expectedRevision: "no_stream" }],
      decidedAt,
    );
    // Decided again twice (here on the same old position each time), then left to the pass.
    expect(asked).toHaveLength(3);
    expect(settled).toEqual([null, null, null]);
    await expectSuccessAlone(childStream);
  });

  it("when the log moved on since the children were decided, they are decided again and go with it", async () => {
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    const childStream = instanceStream(child.key, child.logicalDate);
    const decidedAt = projection.position;
    // Written after the first decision: another success of the same group commit, say.
    await log.append("note-meanwhile", [{ type: "Note", data: { text: "meanwhile" } }], {
      expectedRevision: "no_stream",
    });
    const { settled, asked } = await succeedParent(
      [{ streamId: childStream, events: [intent(child, "child-token-1")], expectedRevision: "no_stream" }],
      [decidedAt, undefined],
    );
    expect(asked).toHaveLength(2);
    expect(settled).toHaveLength(2);
    expect(settled[0]).toBeNull();
    expect(settled[1]).toHaveLength(1);
    // The child's intent is in the commit of its parent's success.
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const [ended] = (await log.readStream(instanceStream(parent.key, parent.logicalDate))).slice(-1);
    const [intended] = await log.readStream(childStream);
    expect(ended?.type).toBe("AttemptSucceeded");
    expect(intended?.type).toBe("DispatchIntended");
    expect(intended?.metadata.recordedAt).toBe(ended?.metadata.recordedAt);
  });

  it("when the log refuses what goes alongside, the success is written without it and the scheduler is told", async () => {
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    const childStream = instanceStream(child.key, child.logicalDate);
    // An intent the log does not take (its token is too short): the whole append is refused.
    const { settled } = await succeedParent([
      { streamId: childStream, events: [intent(child, "short")], expectedRevision: "no_stream" },
    ]);
    expect(settled).toEqual([null]);
    await expectSuccessAlone(childStream);
  });

  it("when the parent's task moved meanwhile, the attempt is written alone, with nothing alongside", async () => {
    const parent = projection.tasks.get("p/a/parent/ALL") as TaskState;
    const child = projection.tasks.get("p/a/child/ALL") as TaskState;
    // The task stream moves on behind this projection's back (a pause, here).
    await log.append(taskStream(parent.key), [{ type: "TaskPaused", data: { key: parent.key } }], {
      expectedRevision: parent.revision,
    });
    const childStream = instanceStream(child.key, child.logicalDate);
    const { settled } = await succeedParent([
      { streamId: childStream, events: [intent(child, "child-token-1")], expectedRevision: "no_stream" },
    ]);
    expect(settled).toEqual([null]);
    const parentEvents = await log.readStream(instanceStream(parent.key, parent.logicalDate));
    expect(parentEvents.map((e) => e.type)).toEqual(["DispatchIntended", "AttemptSucceeded"]);
    expect(await log.readStream(childStream)).toEqual([]);
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
