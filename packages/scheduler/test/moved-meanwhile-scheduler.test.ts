import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DomainEvent,
  instanceStream,
  intentEvent,
  runIdOf,
  SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import type { RunCommand } from "@chronolog/worker";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { RunSlots } from "../src/admission/run-slots.js";
import { AppendChain } from "../src/append-chain.js";
import { declare } from "../src/declare.js";
import { InFlight } from "../src/inflight.js";
import { backfill } from "../src/operations.js";
import { Outbox } from "../src/outbox.js";
import { Ownership } from "../src/ownership.js";
import { catchUp } from "../src/projection-loader.js";
import { LeaseBook } from "../src/reconcile/lease-book.js";
import { RunKeeper } from "../src/run-keeper.js";
import { SuccessCommits } from "../src/success-commit.js";
import { harness, LATEST, SLOT_HOUR, silent, startedRun, until } from "./harness.js";

/**
 * A success starts its children in its own commit only if the log is at the head they were
 * decided at. The head's position alone does not say the log holds what it expected: when one
 * success of a chain is refused, an operator's append of the same number of events can take its
 * place, and the next success finds the head where it expected. Each child is also checked where
 * it stood (its task stream at the revision decided on).
 */
const DAY = 86_400_000;
const PREV = new Date(Date.parse(LATEST) - DAY).toISOString();
const NEXT = new Date(Date.parse(LATEST) + DAY).toISOString();
const OP = { type: "shell", command: "true" };

describe("a child started with its parent's success", () => {
  it("is not started when an operator's append of the same length took the place of one refused before it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aba-sched-"));
    const log: EventLog = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    const projection = new SchedulerProjection();
    const t = (name: string, parents: string) =>
      `  - { project: p, account: a, name: ${name}, parents: [${parents}], cron: "0 ${SLOT_HOUR} * * *", startDate: "${PREV}", idempotent: true, operator: { type: shell, command: "true" } }`;
    const yaml = `tasks:\n${t("p1", "")}\n${t("c1", "p/a/p1/ALL")}\n${t("p2", "")}\n${t("c2", "p/a/p2/ALL")}\n${t("d1", "p/a/c2/ALL")}\n${t("d2", "p/a/c2/ALL")}\n`;
    await declare(log, projection, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
    await catchUp(log, projection);
    // Every task has finished PREV and stands at LATEST (a fixture, written by hand).
    for (const task of projection.tasks.values())
      await log.append(
        taskStream(task.key),
        [
          {
            type: "IntervalCompleted",
            data: { key: task.key, logicalDate: PREV, nextLogicalDate: LATEST, nextRunDate: NEXT },
          },
        ],
        { expectedRevision: task.revision },
      );
    await catchUp(log, projection);
    const intent = (task: TaskState, token: string): DomainEvent =>
      intentEvent(task, 1, token, OP, undefined);
    const p1 = projection.tasks.get("p/a/p1/ALL") as TaskState;
    const p2 = projection.tasks.get("p/a/p2/ALL") as TaskState;
    await log.append(instanceStream(p1.key, LATEST), [intent(p1, "p1-token-1")], {
      expectedRevision: "no_stream",
    });
    await log.append(instanceStream(p2.key, LATEST), [intent(p2, "p2-token-1")], {
      expectedRevision: "no_stream",
    });
    await catchUp(log, projection);

    // An operator (the HTTP API, a CLI) on its own projection: backfill c2 --downstream over PREV.
    const operator = new SchedulerProjection();
    await catchUp(log, operator);
    let F: Promise<unknown> | null = null;
    const appendMany = log.appendMany.bind(log);
    // What the successes' appends (those that start children) were refused with.
    const refusals: unknown[] = [];
    log.appendMany = async (writes, options) => {
      if (options?.expectedHead === undefined) return appendMany(writes, options);
      F ??= backfill(log, operator, "p/a/c2/ALL", PREV.slice(0, 10), PREV.slice(0, 10), true);
      await F; // the operator's append reaches the log first (same group commit, ahead in the queue)
      return appendMany(writes, options).catch((error: unknown) => {
        refusals.push(error);
        throw error;
      });
    };

    const sent: RunCommand[] = [];
    const ownership = new Ownership(projection, undefined);
    const parts = {
      log,
      projection,
      runSlots: new RunSlots({ wakeWaiters: () => {} }),
      inflight: new InFlight(),
      leases: new LeaseBook(),
      outbox: new Outbox(
        {
          dispatch: (c: RunCommand[]) => {
            sent.push(...c);
          },
          onReport: () => undefined,
          query: async () => new Map(),
          cancel: () => {},
          proceed: () => {},
        } as never,
        ownership,
        silent,
        undefined,
        { dispatched: 0 },
      ),
      ownership,
      agenda: { halted: false },
      now: Date.now,
      random: Math.random,
      newToken: () => `tok-${Math.random().toString(36).slice(2)}-xxxxxxxx`,
      logger: silent,
      chain: new AppendChain(),
    };
    const commits = new SuccessCommits(parts as never);
    const report = (task: TaskState, token: string) => ({
      kind: "succeeded" as const,
      token,
      attempt: 1,
      instanceStream: instanceStream(task.key, LATEST),
      workerId: "w1",
      at: new Date().toISOString(),
      durationMs: 5,
      exitCode: 0,
      stdoutTail: "",
      stderrTail: "",
    });
    commits.submit(report(p1, "p1-token-1"));
    commits.submit(report(p2, "p2-token-1"));
    await commits.idle();

    await catchUp(log, projection);
    const c2 = projection.tasks.get("p/a/c2/ALL") as TaskState;
    const c2Latest = await log.readStream(instanceStream(c2.key, LATEST));
    // The operator's backfill set c2 back to PREV; its interval at LATEST was not dispatched under
    // it (left to the pass, which runs it when c2's walk comes back), and no worker heard of it.
    expect(F).not.toBeNull();
    // The swap happened: p2's success found the head where it expected (the backfill's three
    // events in the place of p1's refused success), and only c2's check refused it.
    expect(refusals.map((e) => [(e as Error).name, (e as { streamId?: string }).streamId])).toContainEqual([
      "WrongExpectedRevisionError",
      "task-p/a/c2/ALL",
    ]);
    // p2's success was written again without its child, its advance kept.
    const p2Stream = await log.readStream(taskStream(p2.key));
    expect(p2Stream.filter((e) => e.type === "IntervalCompleted").map((e) => e.data.logicalDate)).toEqual([
      PREV,
      LATEST,
    ]);
    expect(c2.logicalDate).toBe(PREV);
    expect(c2Latest).toEqual([]);
    expect(sent.map((c) => `${c.taskKey}@${c.logicalDate}`)).not.toContain(`p/a/c2/ALL@${LATEST}`);
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("a fail-fast run's close of an interval the keeper has not seen dispatched", () => {
  it("is not written over the dispatch: the attempt is not left running under a closed interval", async () => {
    const dir = mkdtempSync(join(tmpdir(), "chronolog-keeper-"));
    const log: EventLog = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    const projection = new SchedulerProjection();
    const yaml = `workflows:\n  - { name: w, project: p, account: a, cron: "0 ${SLOT_HOUR} * * *", startDate: "${LATEST}", failurePolicy: fail_fast, tasks: [{ name: a, operator: { type: shell, command: "true" } }, { name: b, operator: { type: shell, command: "true" } }] }\n`;
    await declare(log, projection, [{ filename: "w.yaml", document: parse(yaml) }], Date.now());
    await catchUp(log, projection);
    const a = projection.tasks.get("p/a/a/ALL") as TaskState;
    const b = projection.tasks.get("p/a/b/ALL") as TaskState;
    const runId = runIdOf("w", LATEST);
    const intent = (t: TaskState, token: string): DomainEvent => ({
      type: "DispatchIntended",
      data: {
        key: t.key,
        logicalDate: LATEST,
        attempt: 1,
        token,
        operator: OP,
        idempotent: true,
        leaseSeconds: 30,
        runId,
      },
    });
    await startedRun(log, "w", LATEST, [a.key, b.key], "schedule");
    await log.append(instanceStream(a.key, LATEST), [intent(a, "a-token-1")], {
      expectedRevision: "no_stream",
    });
    await log.append(
      instanceStream(a.key, LATEST),
      [
        {
          type: "AttemptFailed",
          data: {
            attempt: 1,
            token: "a-token-1",
            workerId: "w1",
            durationMs: 1,
            exitCode: 1,
            error: { kind: "exit_code", message: "exit 1" },
          },
        },
      ],
      { expectedRevision: 0n },
    );
    // The keeper's projection: a failed, b not started.
    await catchUp(log, projection);
    // The pass decided b before a's failure was applied; its intent is durable, not yet applied.
    await log.append(instanceStream(b.key, LATEST), [intent(b, "b-token-1")], {
      expectedRevision: "no_stream",
    });
    const keeper = new RunKeeper(log, projection, {
      runSlots: new RunSlots({ wakeWaiters: () => {} }),
      ownership: new Ownership(projection, undefined),
      agenda: { wakeWaiters: () => {} } as never,
      outbox: { stop: () => {} } as never,
      stats: { conflicts: 0 },
      logger: silent,
    });
    await keeper.evaluate(runId);
    // Not closed over it: once the keeper has seen the attempt, the fail-fast cancels it (and
    // tells its worker to stop), as any attempt under way.
    const events = await log.readStream(instanceStream(b.key, LATEST));
    expect(events.map((e) => e.type)).toEqual(["DispatchIntended"]);
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("a task's catch-up jump", () => {
  it("is not written over an attempt another scheduler dispatched where the task stood", async () => {
    // A task with catch-up off, set three days behind (a fixture, by hand, as a scheduler that
    // was down for them would find it): the scheduler's first pass jumps it to LATEST.
    const h = await harness([{ name: "j", idempotent: true }]);
    const declared = h.projection.tasks.get("p/a/j/ALL") as TaskState;
    const day = (n: number) => new Date(Date.parse(LATEST) - n * DAY).toISOString();
    const stood = day(3);
    await h.log.append(
      taskStream(declared.key),
      [
        {
          type: "IntervalReset",
          data: {
            key: declared.key,
            logicalDate: stood,
            nextRunDate: day(2),
            prevIntervalStart: day(4),
            reason: "catchup_disabled",
          },
        },
      ],
      { expectedRevision: declared.revision },
    );
    await catchUp(h.log, h.projection);
    const task = h.projection.tasks.get("p/a/j/ALL") as TaskState;
    expect(task.logicalDate).toBe(stood);
    const attempt = instanceStream(task.key, stood);
    // A former owner of the task (another scheduler, on its own projection) dispatched it where
    // it stood, between this scheduler's decision to jump and its append.
    const appendMany = h.log.appendMany.bind(h.log);
    let refused: unknown = null;
    let refusals = 0;
    // The attempt reaches the scheduler's projection 300 ms after it is in the log (as another
    // scheduler's append reaches it, on a log shared over a network).
    const subscribe = h.log.subscribe.bind(h.log);
    h.log.subscribe = (handler, options) =>
      subscribe(async (e) => {
        if (e.streamId === attempt) await new Promise((r) => setTimeout(r, 300));
        return handler(e);
      }, options);
    h.log.appendMany = async (writes, options) => {
      const jump = writes.some((w) =>
        w.events.some(
          (e) => e.type === "IntervalReset" && (e.data as { logicalDate: string }).logicalDate === LATEST,
        ),
      );
      if (jump && refused === null) {
        await h.log.append(attempt, [intentEvent(task, 1, "former-owner-token-1", OP, undefined)], {
          expectedRevision: "no_stream",
        });
        return appendMany(writes, options).catch((error: unknown) => {
          refused = error;
          throw error;
        });
      }
      return appendMany(writes, options).catch((error: unknown) => {
        if (jump) refusals += 1;
        throw error;
      });
    };
    await h.start({ reconcile: false });
    // Refused on the attempt stream it checked; decided again once the attempt is seen: the
    // task waits where it stood, its interval under way, and does not jump past it.
    await until("the jump refused", () => refused !== null);
    expect(refused).toMatchObject({ streamId: attempt, actual: 0n });
    await until("the attempt seen", () => h.projection.instances.get(attempt) !== undefined);
    await new Promise((r) => setTimeout(r, 300));
    // Refused once: not decided again on the projection that had not seen the attempt (which
    // would refuse the same jump at every pass until it had).
    expect(refusals).toBe(0);
    const jumps = (await h.log.readStream(taskStream(task.key))).filter(
      (e) => e.type === "IntervalReset" && (e.data as { logicalDate: string }).logicalDate === LATEST,
    );
    expect(jumps).toEqual([]);
    expect(h.projection.tasks.get("p/a/j/ALL")?.logicalDate).toBe(stood);
    await h.close();
  });
});
