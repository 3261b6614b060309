import {
  type AttemptReportInput,
  type DomainEvent,
  decideReport,
  endsInARow,
  type ReportContext,
  type RetryPolicy,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { DAY, failed, instance, intended, keyOf, started, succeeded, tokenOf } from "./support/events.js";
import { instanceOf, specification } from "./support/specification.js";

const NOW = Date.parse("2026-11-30T10:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const NO_RETRY: RetryPolicy = {
  maxAttempts: 1,
  initialDelayMs: 1000,
  factor: 2,
  maxDelayMs: 300_000,
  jitter: 0,
};

/** decideReport with the shell's clock, retry policy and random number fixed. */
function reports(ctx: Partial<ReportContext> = {}) {
  return specification({
    fold: instanceOf,
    decide: (state, report: AttemptReportInput) =>
      decideReport(state, report, { now: NOW, retry: NO_RETRY, random: 0, ...ctx }),
  });
}

const base = (attempt = 1) => ({ token: tokenOf("t", attempt), attempt, workerId: "w-1" });
const output = { durationMs: 1500, exitCode: 0, stdoutTail: "done\n", stderrTail: "" };
const succeededReport = (attempt = 1): AttemptReportInput => ({
  ...base(attempt),
  kind: "succeeded",
  ...output,
});
const failedReport = (attempt = 1, kind: "exit_code" | "lost" = "exit_code"): AttemptReportInput => ({
  ...base(attempt),
  kind: "failed",
  durationMs: 1500,
  exitCode: kind === "lost" ? null : 2,
  stdoutTail: "",
  stderrTail: "boom\n",
  error: { kind, message: kind === "lost" ? "worker died" : "exit code 2" },
});
const failure = (attempt: number, retryAt?: string): DomainEvent => ({
  type: "AttemptFailed",
  data: {
    attempt,
    token: tokenOf("t", attempt),
    error: { kind: "exit_code", message: "exit code 2" },
    exitCode: 2,
    durationMs: 1500,
    output: { stdoutTail: "", stderrTail: "boom\n" },
    ...(retryAt ? { retryAt } : {}),
  },
});

describe("decideReport: a start", () => {
  it("a queued attempt's start is recorded with its worker, pid and a lease from now", () => {
    reports()
      .given(instance("t", intended("t", { leaseSeconds: 45 })))
      .when({ ...base(), kind: "started", pid: 4242 })
      .then([
        {
          type: "AttemptStarted",
          data: {
            attempt: 1,
            token: tokenOf("t", 1),
            workerId: "w-1",
            pid: 4242,
            leaseExpiresAt: iso(NOW + 45_000),
          },
        },
      ]);
  });

  it("a second start of a running attempt writes nothing", () => {
    reports()
      .given(instance("t", intended(), started()))
      .when({ ...base(), kind: "started" })
      .then([]);
  });
});

describe("decideReport: a heartbeat", () => {
  it("a heartbeat of a running attempt writes nothing: the lease lives in memory", () => {
    reports()
      .given(instance("t", intended(), started()))
      .when({ ...base(), kind: "heartbeat" })
      .then([]);
  });

  it("a heartbeat of a queued attempt records its start (its start report was lost with a scheduler that took it)", () => {
    reports()
      .given(instance("t", intended()))
      .when({ ...base(), kind: "heartbeat" })
      .then([
        {
          type: "AttemptStarted",
          data: { attempt: 1, token: tokenOf("t", 1), workerId: "w-1", leaseExpiresAt: iso(NOW + 30_000) },
        },
      ]);
  });

  it("a heartbeat of an attempt marked lease-expired records it running again", () => {
    reports()
      .given(
        instance("t", intended(), started(), {
          type: "AttemptHeartbeatExpired",
          data: { attempt: 1, token: tokenOf("t", 1), leaseExpiredAt: iso(NOW), workerId: "w-1" },
        }),
      )
      .when({ ...base(), kind: "heartbeat" })
      .then([
        {
          type: "AttemptStarted",
          data: { attempt: 1, token: tokenOf("t", 1), workerId: "w-1", leaseExpiresAt: iso(NOW + 30_000) },
        },
      ]);
  });
});

describe("decideReport: a success", () => {
  it("a running attempt's success records its output", () => {
    reports()
      .given(instance("t", intended(), started()))
      .when(succeededReport())
      .then([
        {
          type: "AttemptSucceeded",
          data: {
            attempt: 1,
            token: tokenOf("t", 1),
            durationMs: 1500,
            exitCode: 0,
            output: { stdoutTail: "done\n", stderrTail: "" },
            cacheHit: false,
          },
        },
      ]);
  });

  it("a success that arrives before its start names the worker that ran it", () => {
    reports()
      .given(instance("t", intended()))
      .when(succeededReport())
      .thenMatches(([event]) => {
        expect(event?.type).toBe("AttemptSucceeded");
        expect(event?.data).toMatchObject({ workerId: "w-1", token: tokenOf("t", 1) });
      });
  });
});

describe("decideReport: a failure", () => {
  const retrying: RetryPolicy = {
    maxAttempts: 3,
    initialDelayMs: 1000,
    factor: 2,
    maxDelayMs: 300_000,
    jitter: 0.5,
  };

  it("a failure the policy retries is due again after its backoff, jitter from the given random", () => {
    // attempt 1: 1000 ms, plus 1000 * 0.5 jitter * 0.4 random = 1200 ms.
    reports({ retry: retrying, random: 0.4 })
      .given(instance("t", intended(), started()))
      .when(failedReport(1))
      .then([failure(1, iso(NOW + 1200))]);
  });

  it("the backoff grows with the attempt: attempt 2 waits twice as long", () => {
    // attempt 2: 1000 * 2 = 2000 ms, plus 2000 * 0.5 * 0.4 = 2400 ms.
    reports({ retry: retrying, random: 0.4 })
      .given(
        instance(
          "t",
          intended(),
          started(),
          failed("t", 1, iso(NOW)),
          intended("t", { attempt: 2 }),
          started("t", 2),
        ),
      )
      .when(failedReport(2))
      .then([failure(2, iso(NOW + 2400))]);
  });

  it("a failure with the retries used up has no retry: the instance fails", () => {
    reports({ retry: retrying, random: 0.4 })
      .given(
        instance(
          "t",
          intended(),
          started(),
          failed("t", 1, iso(NOW)),
          intended("t", { attempt: 2 }),
          started("t", 2),
          failed("t", 2, iso(NOW)),
          intended("t", { attempt: 3 }),
          started("t", 3),
        ),
      )
      .when(failedReport(3))
      .then([failure(3)]);
    reports({ retry: NO_RETRY })
      .given(instance("t", intended(), started()))
      .when(failedReport(1))
      .then([failure(1)]);
  });

  it("a worker lost mid-run is retried at once for an idempotent task, never for one that is not", () => {
    reports()
      .given(instance("t", intended("t", { idempotent: true }), started()))
      .when(failedReport(1, "lost"))
      .thenMatches(([event]) => expect(event?.data).toMatchObject({ retryAt: iso(NOW) }));
    reports()
      .given(instance("t", intended("t", { idempotent: false }), started()))
      .when(failedReport(1, "lost"))
      .thenMatches(([event]) => expect(event?.data).not.toHaveProperty("retryAt"));
  });
});

describe("decideReport: reports that do not apply", () => {
  it("a report with the token of an earlier attempt is stale, and recorded as rejected", () => {
    reports()
      .given(instance("t", intended(), failed("t", 1, iso(NOW)), intended("t", { attempt: 2 })))
      .when(succeededReport(1))
      .then([
        {
          type: "CompletionRejected",
          data: {
            token: tokenOf("t", 1),
            attempt: 1,
            report: "succeeded",
            reason: "stale_token",
            currentToken: tokenOf("t", 2),
            workerId: "w-1",
          },
        },
      ]);
  });

  it("a report with a token the instance never issued is recorded as rejected", () => {
    const unknown: AttemptReportInput = { ...succeededReport(), token: "tok-from-nowhere" };
    const rejected: DomainEvent[] = [
      {
        type: "CompletionRejected",
        data: {
          token: "tok-from-nowhere",
          attempt: 1,
          report: "succeeded",
          reason: "unknown_token",
          workerId: "w-1",
        },
      },
    ];
    reports()
      .given(instance("t", intended(), started()))
      .when(unknown)
      .then(rejected);
    reports().given().when(unknown).then(rejected);
  });

  it("a duplicate outcome is refused and recorded; a late start or heartbeat changes nothing", () => {
    const done = instance("t", intended(), started(), succeeded());
    reports()
      .given(done)
      .when(succeededReport())
      .then([
        {
          type: "CompletionRejected",
          data: {
            token: tokenOf("t", 1),
            attempt: 1,
            report: "succeeded",
            reason: "already_terminal",
            workerId: "w-1",
          },
        },
      ]);
    reports()
      .given(done)
      .when({ ...base(), kind: "started" })
      .then([]);
    reports()
      .given(done)
      .when({ ...base(), kind: "heartbeat" })
      .then([]);
  });
});

describe("decideReport: an attempt interrupted by a shutdown", () => {
  const interrupted = (attempt = 1): AttemptReportInput => ({
    ...base(attempt),
    kind: "failed",
    durationMs: 800,
    exitCode: null,
    stdoutTail: "",
    stderrTail: "",
    error: { kind: "interrupted", message: "worker shutdown (grace of 1000 ms elapsed)" },
  });
  const retryAtOf = (events: readonly DomainEvent[]) =>
    (events[0]?.data as { retryAt?: string } | undefined)?.retryAt;

  it("an idempotent task runs again at once, though its policy allows one attempt", () => {
    reports()
      .given(instance("t", intended("t", { idempotent: true }), started("t")))
      .when(interrupted())
      .thenMatches((events) => {
        expect(events.map((e) => e.type)).toEqual(["AttemptFailed"]);
        expect(retryAtOf(events)).toBe(iso(NOW));
      });
  });

  it("a task that is not idempotent and had started is left for the operator", () => {
    reports()
      .given(instance("t", intended("t", { idempotent: false }), started("t")))
      .when(interrupted())
      .thenMatches((events) => expect(retryAtOf(events)).toBeUndefined());
  });

  it("one that had not started runs again at once, idempotent or not", () => {
    reports()
      .given(instance("t", intended("t", { idempotent: false })))
      .when(interrupted())
      .thenMatches((events) => expect(retryAtOf(events)).toBe(iso(NOW)));
  });

  it("ended by the scheduler before any worker began it, names no worker as its starter", () => {
    // A worker's end of an attempt whose start was not recorded claims the start (it ran, and
    // ended before its start was written); the scheduler's own end of one never begun does not.
    const queued = instance("t", intended("t", { idempotent: false }));
    reports()
      .given(queued)
      .when(interrupted())
      .thenMatches((events) => expect(events[0]?.data).toMatchObject({ workerId: "w-1" }));
    reports()
      .given(queued)
      .when({ ...interrupted(), neverStarted: true })
      .thenMatches((events) => {
        expect(events[0]?.data).not.toHaveProperty("workerId");
        expect(retryAtOf(events)).toBe(iso(NOW));
      });
  });

  it("of an interval reopened after the scheduler let go of its stream starts a fresh budget", () => {
    // The projection keeps no ended interval the task has moved past: a backfill of it starts
    // from its new attempt alone (attempt 4 here, after three that ran before).
    const reopened = instance("t", intended("t", { idempotent: true, attempt: 4 }), started("t", 4));
    reports({ retry: { ...NO_RETRY, maxAttempts: 2 } })
      .given(reopened)
      .when(failedReport(4))
      .thenMatches((events) => expect(retryAtOf(events)).toBe(iso(NOW + 1000)));
    reports()
      .given(reopened)
      .when(failedReport(4))
      .thenMatches((events) => expect(retryAtOf(events)).toBeUndefined());
  });

  it("of an interval the scheduler took up again by its closing, then reopened, starts a fresh budget", () => {
    // Let go once ended, the stream is taken up again by a closing (its parent failed), then a
    // retry reopens it: attempt 3 is the first of a fresh budget, not the third.
    const closed: DomainEvent = {
      type: "InstanceUpstreamFailed",
      data: { key: keyOf("t"), logicalDate: DAY, failedParent: keyOf("up"), reason: "p/a/up/ALL failed" },
    };
    const reopened = instance("t", closed, intended("t", { idempotent: true, attempt: 3 }), started("t", 3));
    reports({ retry: { ...NO_RETRY, maxAttempts: 2 } })
      .given(reopened)
      .when(failedReport(3))
      .thenMatches((events) => expect(retryAtOf(events)).toBe(iso(NOW + 1000)));
  });

  it("by the end of its scheduler process runs again, until a fourth such end in a row halts it", () => {
    const ended = "worker w1 belonged to an earlier scheduler process and is gone";
    const endedEvent = (attempt: number): DomainEvent => ({
      type: "AttemptFailed",
      data: {
        attempt,
        token: tokenOf("t", attempt),
        error: { kind: "interrupted", message: ended },
        exitCode: null,
        retryAt: iso(NOW - 1000),
      },
    });
    const after = (ends: number) =>
      instance(
        "t",
        ...Array.from({ length: ends }, (_, i) => [
          intended("t", { idempotent: true, attempt: i + 1 }),
          started("t", i + 1),
          endedEvent(i + 1),
        ]).flat(),
        intended("t", { idempotent: true, attempt: ends + 1 }),
        started("t", ends + 1),
      );
    const report = (attempt: number): AttemptReportInput => ({
      ...interrupted(attempt),
      error: { kind: "interrupted", message: ended },
    });
    const messageOf = (events: readonly DomainEvent[]) =>
      (events[0]?.data as { error?: { message?: string } } | undefined)?.error?.message;
    reports()
      .given(after(2))
      .when(report(3))
      .thenMatches((events) => {
        expect(retryAtOf(events)).toBe(iso(NOW));
        expect(messageOf(events)).toBe(ended);
      });
    // Halted, it says why in its error (which `why` reads), not for being not idempotent.
    reports()
      .given(after(3))
      .when(report(4))
      .thenMatches((events) => {
        expect(retryAtOf(events)).toBeUndefined();
        expect(messageOf(events)).toBe(`${ended}, the 4th such end in a row`);
        // As `why` reads it back.
        expect(endsInARow(messageOf(events))).toBe(4);
        expect(endsInARow(ended)).toBeUndefined();
      });
    // Shutdowns are no cause for that: a fourth is run again all the same.
    reports()
      .given(after(3))
      .when(interrupted(4))
      .thenMatches((events) => expect(retryAtOf(events)).toBe(iso(NOW)));
  });

  it("is counted apart from the retry budget", () => {
    const interruptedEvent: DomainEvent = {
      type: "AttemptFailed",
      data: {
        attempt: 1,
        token: tokenOf("t", 1),
        error: { kind: "interrupted", message: "worker shutdown (grace of 1000 ms elapsed)" },
        exitCode: null,
        durationMs: 800,
        retryAt: iso(NOW - 1000),
      },
    };
    const history = instance(
      "t",
      intended("t", { idempotent: true }),
      started("t"),
      interruptedEvent,
      intended("t", { idempotent: true, attempt: 2 }),
      started("t", 2),
    );
    // Two attempts allowed: the interrupted one does not count, so a failure of the second is retried.
    reports({ retry: { ...NO_RETRY, maxAttempts: 2 } })
      .given(history)
      .when(failedReport(2))
      .thenMatches((events) => expect(retryAtOf(events)).toBe(iso(NOW + 1000)));
    // With one allowed, the second attempt was the task's only try: no retry.
    reports()
      .given(history)
      .when(failedReport(2))
      .thenMatches((events) => expect(retryAtOf(events)).toBeUndefined());
  });
});
