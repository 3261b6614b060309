import {
  type AttemptReportInput,
  type ChildStarter,
  connectionSpecSchema,
  connectionStream,
  decideSuccessCommit,
  instanceStream,
  MAX_CHILDREN_WITH_SUCCESS,
  type SchedulerProjection,
  type SuccessCommit,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  declaredTask,
  heartbeatExpired,
  idOf,
  instance,
  intended,
  keyOf,
  NEXT_DAY,
  started,
  streamOf,
  taskSpec,
  tokenOf,
} from "./support/events.js";
import { type Given, on, projectionOf, specification } from "./support/specification.js";

/**
 * decideSuccessCommit, given / when / then: given a history, when a batch of reports arrives for
 * the parent's attempt stream, then the one append (the attempt's events, the task's advance,
 * each child's intent) and what the workers are told.
 */
const DUE = Date.parse(NEXT_DAY) + 1000;

interface When {
  readonly reports: readonly AttemptReportInput[];
  readonly stream?: string;
  readonly advance?: boolean;
  /** How children start (default: the starter below; null: they are left to the pass). */
  readonly starter?: ChildStarter | null;
}

/** A scheduler with nothing in flight and every task its own: tokens `child-token-<n>`. */
function starter(over: Partial<ChildStarter> = {}): ChildStarter {
  let n = 0;
  return {
    startable: () => true,
    runSlotsTaken: () => 0,
    waitsForRunSlot: () => false,
    render: (child: TaskState) => ({ operator: child.spec.operator, cacheKey: undefined }),
    newToken: () => `child-token-${++n}`,
    ...over,
  };
}

const decide = (p: SchedulerProjection, w: When): SuccessCommit => {
  const stream = w.stream ?? streamOf("parent");
  return decideSuccessCommit(p, {
    stream,
    instance: p.instances.get(stream),
    reports: w.reports,
    now: DUE,
    random: 0,
    advance: w.advance ?? true,
    children: w.starter === undefined ? starter() : w.starter,
  });
};
const spec = specification({ fold: projectionOf, decide });

const report = { token: tokenOf("parent", 1), attempt: 1, workerId: "w-1" };
const success: AttemptReportInput = {
  ...report,
  kind: "succeeded",
  durationMs: 10,
  exitCode: 0,
  stdoutTail: "",
  stderrTail: "",
};
const failure: AttemptReportInput = {
  ...report,
  kind: "failed",
  durationMs: 10,
  exitCode: 3,
  stdoutTail: "",
  stderrTail: "no such table\n",
  error: { kind: "exit_code", message: "exit code 3" },
};
const heartbeat: AttemptReportInput = { ...report, kind: "heartbeat" };

/** The parent running its DAY attempt, and children of it, each due at DAY. */
function family(children: readonly string[], childSpec: Parameters<typeof taskSpec>[1] = {}): Given[] {
  return [
    ...declaredTask("parent", DAY, taskSpec("parent", { idempotent: true })),
    ...children.flatMap((c) =>
      declaredTask(c, DAY, taskSpec(c, { parents: [keyOf("parent")], idempotent: true, ...childSpec })),
    ),
    ...instance("parent", intended("parent", { idempotent: true }), started("parent")),
  ];
}

const typesOf = (c: SuccessCommit) => c.writes.map((w) => [w.streamId, w.events.map((e) => e.type)]);

describe("decideSuccessCommit: a success", () => {
  it("ends the attempt, completes the interval, advances the task and starts the child, in one append", () => {
    spec
      .given(family(["child"]))
      .when({ reports: [success] })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([
          [streamOf("parent"), ["AttemptSucceeded"]],
          [taskStream(keyOf("parent")), ["IntervalCompleted"]],
          [streamOf("child"), ["DispatchIntended"]],
        ]);
        expect(c.writes.map((w) => w.expectedRevision)).toEqual([1n, 0n, "no_stream"]);
        expect(c.writes[1]?.events[0]?.data).toMatchObject({ logicalDate: DAY, nextLogicalDate: NEXT_DAY });
        expect(c.writes[2]?.events[0]?.data).toMatchObject({ attempt: 1, token: "child-token-1" });
        expect(c.completed?.task.id).toBe(idOf("parent"));
        expect(c.children.map((s) => [s.task.id, s.attempt, s.token])).toEqual([
          [idOf("child"), 1, "child-token-1"],
        ]);
        expect(c.after?.status).toBe("success");
        expect(c.ended).toEqual([tokenOf("parent", 1)]);
        expect(c.answers).toEqual([]);
      });
  });

  it("leaves the children to the pass when the shell starts none with it", () => {
    spec
      .given(family(["child"]))
      .when({ reports: [success], starter: null })
      .thenMatches((c) => {
        expect(typesOf(c).map(([s]) => s)).toEqual([streamOf("parent"), taskStream(keyOf("parent"))]);
        expect(c.children).toEqual([]);
      });
  });

  it("writes the attempt alone when the task is not to advance with it (its stream moved on)", () => {
    spec
      .given(family(["child"]))
      .when({ reports: [success], advance: false })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([[streamOf("parent"), ["AttemptSucceeded"]]]);
        expect(c.completed).toBeNull();
      });
  });

  it("starts no child the scheduler may not start, nor one whose payload does not render", () => {
    spec
      .given(family(["busy", "broken", "free"]))
      .when({
        reports: [success],
        starter: starter({
          startable: (t) => t.id !== idOf("busy"),
          render: (t) => {
            if (t.id === idOf("broken")) throw new Error("undefined variable");
            return { operator: t.spec.operator, cacheKey: undefined };
          },
        }),
      })
      .thenMatches((c) => expect(c.children.map((s) => s.task.id)).toEqual([idOf("free")]));
  });

  it("leaves to the pass a child on a connection (its slot is taken with the pass's count)", () => {
    const conn = connectionSpecSchema.parse({ name: "db", operators: ["noop"], maxParallelism: 4 });
    spec
      .given([
        ...on(connectionStream("db"), { type: "ConnectionDeclared", data: { spec: conn } }),
        ...family(["on_db"], { connection: "db" }),
        ...declaredTask("plain", DAY, taskSpec("plain", { parents: [keyOf("parent")] })),
      ])
      .when({ reports: [success] })
      .thenMatches((c) => expect(c.children.map((s) => s.task.id)).toEqual([idOf("plain")]));
  });

  it("starts children of a worker queue while its workers have free slots; the pass takes the rest", () => {
    const room = { connected: 1, busy: 1, slots: 3 };
    spec
      .given(family(["q1", "q2", "q3"], { queue: "gpu" }))
      .when({ reports: [success], starter: starter({ queueRoom: () => room }) })
      .thenMatches((c) => {
        // Two slots free: the first two children start with the success, the third waits for the pass.
        expect(c.children.map((s) => s.task.id)).toEqual([idOf("q1"), idOf("q2")]);
        expect(typesOf(c).at(-1)).toEqual([streamOf("q2"), ["DispatchIntended"]]);
      });
  });

  it("leaves children of a worker queue to the pass with no worker connected, or no room known", () => {
    spec
      .given(family(["q1"], { queue: "gpu" }))
      .when({
        reports: [success],
        starter: starter({ queueRoom: () => ({ connected: 0, busy: 0, slots: 0 }) }),
      })
      .thenMatches((c) => expect(c.children).toEqual([]));
    spec
      .given(family(["q1"], { queue: "gpu" }))
      .when({ reports: [success] })
      .thenMatches((c) => expect(c.children).toEqual([]));
  });

  it("leaves to the pass a child whose other parent has not finished the interval", () => {
    spec
      .given([
        ...family(["one_parent"]),
        ...declaredTask("other", DAY),
        ...declaredTask(
          "two_parents",
          DAY,
          taskSpec("two_parents", { parents: [keyOf("parent"), keyOf("other")] }),
        ),
      ])
      .when({ reports: [success] })
      .thenMatches((c) => expect(c.children.map((s) => s.task.id)).toEqual([idOf("one_parent")]));
  });

  it("records no intent for a child whose cache key an earlier success has: the pass records the hit", () => {
    const EARLIER = "2026-11-27T02:00:00.000Z";
    const cachedRun = instanceStream(keyOf("cached"), EARLIER);
    const history = [
      ...family(["cached"], { cacheKey: "{{ config.table }}" }),
      ...on(
        cachedRun,
        { ...intended("cached"), data: { ...intended("cached").data, logicalDate: EARLIER, cacheKey: "k" } },
        {
          type: "AttemptSucceeded" as const,
          data: {
            attempt: 1,
            token: tokenOf("cached", 1),
            durationMs: 1,
            exitCode: 0,
            cacheHit: false,
            cacheKey: "k",
          },
        },
      ),
    ];
    const withKey = (key: string) =>
      starter({ render: (t) => ({ operator: t.spec.operator, cacheKey: key }) });
    spec
      .given(history)
      .when({ reports: [success], starter: withKey("k") })
      .thenMatches((c) => expect(c.children).toEqual([]));
    spec
      .given(history)
      .when({ reports: [success], starter: withKey("another") })
      .thenMatches((c) => expect(c.children.map((s) => s.task.id)).toEqual([idOf("cached")]));
  });

  it(`starts at most ${MAX_CHILDREN_WITH_SUCCESS} children; the pass starts the rest`, () => {
    const names = Array.from({ length: MAX_CHILDREN_WITH_SUCCESS + 8 }, (_, i) => `fan_${i}`);
    spec
      .given(family(names))
      .when({ reports: [success] })
      .thenMatches((c) => {
        expect(c.children).toHaveLength(MAX_CHILDREN_WITH_SUCCESS);
        expect(c.writes).toHaveLength(2 + MAX_CHILDREN_WITH_SUCCESS);
        expect(new Set(c.children.map((s) => s.token)).size).toBe(MAX_CHILDREN_WITH_SUCCESS);
      });
  });
});

describe("decideSuccessCommit: other reports", () => {
  it("a failure writes the attempt's end alone: the interval is not complete", () => {
    spec
      .given(family(["child"]))
      .when({ reports: [failure] })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([[streamOf("parent"), ["AttemptFailed"]]]);
        expect(c.completed).toBeNull();
        expect(c.ended).toEqual([tokenOf("parent", 1)]);
      });
  });

  it("a heartbeat of the running attempt writes nothing and renews its lease from now", () => {
    spec
      .given(family([]))
      .when({ reports: [heartbeat] })
      .then({
        writes: [],
        after: expect.objectContaining({ status: "running" }),
        completed: null,
        children: [],
        answers: [],
        leases: new Map([[tokenOf("parent", 1), DUE + 30_000]]),
        ended: [],
      } as unknown as SuccessCommit);
  });

  it("a heartbeat of an attempt whose lease expired records its start again, and renews the lease", () => {
    spec
      .given([...family([]), ...instance("parent", heartbeatExpired("parent"))])
      .when({ reports: [heartbeat] })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([[streamOf("parent"), ["AttemptStarted"]]]);
        expect(c.leases.get(tokenOf("parent", 1))).toBe(DUE + 30_000);
      });
  });

  it("a heartbeat with a token that is not the attempt's is recorded as rejected, and its worker told to stop", () => {
    spec
      .given(family([]))
      .when({ reports: [{ ...heartbeat, token: "tok-someone-else" }] })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([[streamOf("parent"), ["CompletionRejected"]]]);
        expect(c.answers).toEqual([{ token: "tok-someone-else", answer: "stop" }]);
        expect(c.leases.size).toBe(0);
      });
  });

  it("a heartbeat of an attempt that waits for its start permission, its start on record: told to proceed again", () => {
    const guarded = instanceStream(keyOf("guarded"), DAY);
    spec
      .given([...declaredTask("guarded"), ...instance("guarded", intended("guarded"), started("guarded"))])
      .when({
        stream: guarded,
        reports: [{ token: tokenOf("guarded", 1), attempt: 1, workerId: "w-1", kind: "heartbeat" }],
      })
      .thenMatches((c) => {
        expect(c.writes).toEqual([]);
        expect(c.answers).toEqual([{ token: tokenOf("guarded", 1), answer: "proceed" }]);
      });
  });

  it("a heartbeat of an attempt that waits for its start permission, its start lost: the start is written, then proceed", () => {
    const guarded = instanceStream(keyOf("guarded"), DAY);
    spec
      .given([...declaredTask("guarded"), ...instance("guarded", intended("guarded"))])
      .when({
        stream: guarded,
        reports: [{ token: tokenOf("guarded", 1), attempt: 1, workerId: "w-1", kind: "heartbeat" }],
      })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([[guarded, ["AttemptStarted"]]]);
        expect(c.answers).toEqual([{ token: tokenOf("guarded", 1), answer: "proceed" }]);
      });
  });

  it("a start of an attempt that already ended: its worker is told to stop, not left waiting", () => {
    const guarded = instanceStream(keyOf("guarded"), DAY);
    spec
      .given([
        ...declaredTask("guarded"),
        ...instance("guarded", intended("guarded"), {
          type: "AttemptFailed",
          data: {
            attempt: 1,
            token: tokenOf("guarded", 1),
            error: { kind: "lost", message: "worker gone" },
            exitCode: null,
            durationMs: 0,
          },
        }),
      ])
      .when({
        stream: guarded,
        reports: [{ token: tokenOf("guarded", 1), attempt: 1, workerId: "w-1", kind: "started" }],
      })
      .thenMatches((c) => {
        expect(c.answers).toEqual([{ token: tokenOf("guarded", 1), answer: "stop" }]);
      });
  });

  it("a start, a heartbeat and the success of one attempt in a batch: the success alone, nothing to tell", () => {
    spec
      .given([
        ...declaredTask("parent", DAY, taskSpec("parent", { idempotent: true })),
        ...instance("parent", intended("parent", { idempotent: true })),
      ])
      .when({ reports: [{ ...report, kind: "started" }, heartbeat, success] })
      .thenMatches((c) => {
        expect(c.writes[0]?.events.map((e) => e.type)).toEqual(["AttemptSucceeded"]);
        expect(c.answers).toEqual([]);
      });
  });

  it("the start of an attempt that waits for its start permission is written, and its worker told to proceed once it is durable", () => {
    const guarded = instanceStream(keyOf("guarded"), DAY);
    spec
      .given([...declaredTask("guarded"), ...instance("guarded", intended("guarded"))])
      .when({
        stream: guarded,
        reports: [{ token: tokenOf("guarded", 1), attempt: 1, workerId: "w-1", kind: "started", pid: 7 }],
      })
      .thenMatches((c) => {
        expect(typesOf(c)).toEqual([[guarded, ["AttemptStarted"]]]);
        expect(c.answers).toEqual([{ token: tokenOf("guarded", 1), answer: "proceed" }]);
      });
  });
});
