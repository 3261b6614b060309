import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import type { RunCommand, WorkerReport } from "@chronolog/worker";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { declare } from "../src/declare.js";
import type { Dispatcher } from "../src/dispatcher.js";
import type { Membership } from "../src/membership.js";
import { catchUp } from "../src/projection-loader.js";
import { Scheduler } from "../src/scheduler.js";
import { DAY, LATEST, SLOT_HOUR, until } from "./harness.js";

/**
 * A scheduler whose membership is fenced (it may be dropped from its group without hearing of
 * it) holds no shard: it decides nothing, kills what its workers run, and hands no attempt to a
 * worker, not even one whose intent or start was acknowledged only after the fence came down.
 */
class FakeMembership implements Membership {
  readonly id = "s1";
  readonly shards = 1;
  private readonly listeners = new Set<() => void>();
  constructor(private isFenced: boolean) {}
  holds(): boolean {
    return !this.isFenced;
  }
  isAlive(): boolean {
    return true;
  }
  fenced(): boolean {
    return this.isFenced;
  }
  set(fenced: boolean): void {
    this.isFenced = fenced;
    for (const l of this.listeners) l();
  }
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  async close(): Promise<void> {}
}

class FakeDispatcher implements Dispatcher {
  readonly dispatched: RunCommand[] = [];
  readonly killed: string[] = [];
  readonly proceeded: string[] = [];
  readonly cancelled: string[] = [];
  private listener: ((r: WorkerReport) => void) | undefined;
  dispatch(commands: readonly RunCommand[]): void {
    this.dispatched.push(...commands);
  }
  onReport(listener: (r: WorkerReport) => void): () => void {
    this.listener = listener;
    return () => {
      this.listener = undefined;
    };
  }
  report(r: WorkerReport): void {
    this.listener?.(r);
  }
  async query(): Promise<Map<string, string>> {
    return new Map();
  }
  cancel(token: string): void {
    this.cancelled.push(token);
  }
  proceed(token: string): void {
    this.proceeded.push(token);
  }
  killAll(reason: string): number {
    this.killed.push(reason);
    return this.dispatched.length;
  }
}

/** The log, with its appends held back while `hold` is set (an acknowledgement that is late). */
function holdable(log: EventLog): { log: EventLog; hold: boolean; release(): void; held(): number } {
  let waiting: Array<() => void> = [];
  const gate = {
    hold: false,
    release() {
      gate.hold = false;
      const w = waiting;
      waiting = [];
      for (const go of w) go();
    },
    held: () => waiting.length,
    log: new Proxy(log, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (prop !== "append" && prop !== "appendMany") return value.bind(target);
        return async (...args: unknown[]) => {
          if (gate.hold) await new Promise<void>((go) => waiting.push(go));
          return value.apply(target, args);
        };
      },
    }),
  };
  return gate;
}

const lines: Array<{ level: string; msg: string; obj: object }> = [];
const logger = {
  info: (obj: object, msg = "") => lines.push({ level: "info", msg, obj }),
  warn: (obj: object, msg = "") => lines.push({ level: "warn", msg, obj }),
  error: (obj: object, msg = "") => lines.push({ level: "error", msg, obj }),
  debug() {},
};
const said = (start: string) => lines.filter((l) => l.msg.startsWith(start));

let dir: string;
let log: EventLog;
let projection: SchedulerProjection;
let scheduler: Scheduler | null = null;
beforeEach(async () => {
  lines.length = 0;
  dir = mkdtempSync(join(tmpdir(), "chronolog-fence-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  projection = new SchedulerProjection();
  const task = (name: string) =>
    `  - { project: p, account: a, name: ${name}, cron: "0 ${SLOT_HOUR} * * *", startDate: "${new Date(Date.parse(LATEST) - 30 * DAY).toISOString()}", catchup: false, idempotent: false, operator: { type: shell, command: "true" } }`;
  const yaml = `tasks:\n${task("one")}\n${task("two")}\n`;
  await declare(log, projection, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, projection);
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = null;
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(eventLog: EventLog, membership: Membership, dispatcher: Dispatcher): Promise<void> {
  scheduler = new Scheduler({ log: eventLog, projection, dispatcher, logger, membership });
  return scheduler.start();
}

const settle = () => new Promise((r) => setTimeout(r, 200));

describe("a fenced scheduler", () => {
  it("decides nothing while fenced, and dispatches the due tasks once the fence lifts", async () => {
    const membership = new FakeMembership(true);
    const dispatcher = new FakeDispatcher();
    await start(log, membership, dispatcher);
    await settle();
    expect(dispatcher.dispatched).toEqual([]);
    membership.set(false);
    await until("both tasks dispatched", () => dispatcher.dispatched.length === 2);
    expect(said("fence lifted")).toHaveLength(1);
    // (It was fenced from the start: it had run nothing, so there was nothing to kill.)
    expect(dispatcher.killed).toEqual([]);
  });

  it("kills what its workers run when the fence comes down, and lets no late start run", async () => {
    const membership = new FakeMembership(false);
    const dispatcher = new FakeDispatcher();
    const gate = holdable(log);
    await start(gate.log, membership, dispatcher);
    await until("both tasks dispatched", () => dispatcher.dispatched.length === 2);
    const [first] = dispatcher.dispatched as [RunCommand];

    // The worker says it started; AttemptStarted is being written when the fence comes down.
    gate.hold = true;
    dispatcher.report({
      kind: "started",
      token: first.token,
      attempt: first.attempt,
      instanceStream: first.instanceStream,
      workerId: "s1-1",
      at: new Date().toISOString(),
      pid: 1,
    });
    await until("the start to be on its way to the log", () => gate.held() > 0);
    membership.set(true);
    expect(dispatcher.killed).toHaveLength(1);
    expect(dispatcher.killed[0]).toMatch(/scheduler s1 was fenced/);
    expect(said("fenced:")).toMatchObject([{ level: "warn", obj: { scheduler: "s1", killed: 2 } }]);

    gate.release();
    await until("the late start to be answered", () => dispatcher.cancelled.length > 0);
    expect(dispatcher.cancelled).toEqual([first.token]);
    expect(dispatcher.proceeded).toEqual([]);
    // Fenced again (an event that changes nothing): no second kill.
    membership.set(true);
    expect(dispatcher.killed).toHaveLength(1);
  });

  it("hands no worker an intent acknowledged after the fence came down", async () => {
    const membership = new FakeMembership(false);
    const dispatcher = new FakeDispatcher();
    const gate = holdable(log);
    gate.hold = true;
    await start(gate.log, membership, dispatcher);
    await until("both intents on their way to the log", () => gate.held() === 2);
    membership.set(true);
    gate.release();
    await until("both intents durable", () =>
      [...projection.instances.values()].filter((i) => i.status === "queued").length === 2 ? true : undefined,
    );
    await settle();
    expect(dispatcher.dispatched).toEqual([]);
    expect(said("intents not handed to workers")).toMatchObject([{ obj: { attempts: 2 } }]);
    membership.set(false);
    expect(said("fence lifted")).toHaveLength(1);
  });
});
