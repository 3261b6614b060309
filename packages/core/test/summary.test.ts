import { counted, summarizeEvent } from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { keyOf } from "./support/events.js";

describe("summarizeEvent: what an event says, in a line of words", () => {
  it("a failed attempt says why: its error, the last line of its stderr, and its retry", () => {
    expect(
      summarizeEvent({
        type: "AttemptFailed",
        data: {
          attempt: 2,
          token: "tok-12345678",
          error: { kind: "exit_code", message: "exited with code 3" },
          exitCode: 3,
          output: { stdoutTail: "", stderrTail: "loading\nno such table: orders\n\n" },
          retryAt: "2026-12-01T03:35:00.000Z",
        },
      }),
    ).toBe(
      "attempt 2 failed: exited with code 3; last line of stderr: no such table: orders; retry at 2026-12-01T03:35Z",
    );
  });

  it("a declaration's change names each field, old -> new; a pause its reason; a reset where to", () => {
    expect(
      summarizeEvent({
        type: "TaskDeclarationChanged",
        data: {
          key: keyOf("t"),
          // (The spec is not summarised: the changes are.)
          spec: {} as never,
          changes: [
            { field: "cron", from: "0 2 * * *", to: "0 3 * * *" },
            { field: "retry.maxAttempts", from: 1, to: 3 },
          ],
        },
      }),
    ).toBe('p/a/t/ALL changed cron: "0 2 * * *" -> "0 3 * * *"; retry.maxAttempts: 1 -> 3');
    expect(summarizeEvent({ type: "TaskPaused", data: { key: keyOf("t"), reason: "source\nis down" } })).toBe(
      "p/a/t/ALL paused: source is down",
    );
    expect(
      summarizeEvent({
        type: "IntervalReset",
        data: {
          key: keyOf("t"),
          logicalDate: "2026-11-30T00:00:00.000Z",
          nextRunDate: "2026-12-01T00:00:00.000Z",
          prevIntervalStart: null,
          reason: "backfill",
          until: "2026-12-01T00:00:00.000Z",
          backfillId: "bf-1",
        },
      }),
    ).toBe("p/a/t/ALL set to 2026-11-30T00:00Z (backfill bf-1 until 2026-12-01T00:00Z)");
    expect(
      summarizeEvent({
        type: "IntervalReset",
        data: {
          key: keyOf("t"),
          logicalDate: "2026-11-30T00:00:00.000Z",
          nextRunDate: "2026-12-01T00:00:00.000Z",
          prevIntervalStart: null,
          reason: "backfill",
          until: "2026-12-01T00:00:00.000Z",
          backfillId: "bf-2",
          priority: -7,
        },
      }),
    ).toBe("p/a/t/ALL set to 2026-11-30T00:00Z (backfill bf-2 until 2026-12-01T00:00Z at priority -7)");
  });

  it("a long free text is cut, on one line", () => {
    const said = summarizeEvent({ type: "TaskRetired", data: { key: keyOf("t"), reason: "x".repeat(500) } });
    expect(said.length).toBeLessThan(160);
    expect(said).toMatch(/\.\.\.$/);
  });

  it("counts are in their number", () => {
    expect([
      counted(0, "task"),
      counted(1, "task"),
      counted(2, "try", "tries"),
      counted(1n, "event"),
    ]).toEqual(["0 tasks", "1 task", "2 tries", "1 event"]);
  });
});
