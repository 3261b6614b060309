import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  currentSchemaVersion,
  EVENT_TYPES,
  UnknownEventTypeError,
  UnsupportedSchemaVersionError,
  upcastEventData,
  ValidationError,
  validateDeclarations,
  validateEventData,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";

const key = { project: "sales", account: "acme", name: "orders_raw", partition: "ALL" };

describe("event catalog", () => {
  it("names every event the scheduler, reconciler and runs need", () => {
    for (const type of [
      "TaskDeclared",
      "TaskDeclarationChanged",
      "TaskPaused",
      "TaskResumed",
      "TaskRetired",
      "IntervalReset",
      "IntervalCompleted",
      "DispatchIntended",
      "AttemptStarted",
      "AttemptHeartbeatExpired",
      "AttemptSucceeded",
      "AttemptFailed",
      "AttemptAbandoned",
      "InstanceSkipped",
      "InstanceUpstreamFailed",
      "CompletionRejected",
      "RunStarted",
      "RunFinished",
    ]) {
      expect(EVENT_TYPES).toContain(type);
    }
  });

  it("validates data and applies defaults", () => {
    const data = validateEventData("TaskPaused", { key: { project: "p", account: "a", name: "n" } });
    expect(data.key.partition).toBe("ALL");
  });

  it("rejects unknown fields, naming the field", () => {
    const err = (() => {
      try {
        validateEventData("TaskPaused", { key, colour: "red" });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toContain("colour");
  });

  it("rejects a bad instant and a bad key part with the field path", () => {
    expect(() =>
      validateEventData("IntervalCompleted", {
        key,
        logicalDate: "yesterday",
        nextLogicalDate: "2026-11-02T02:00:00.000Z",
        nextRunDate: "2026-11-03T02:00:00.000Z",
      }),
    ).toThrow(/logicalDate/);
    expect(() => validateEventData("TaskResumed", { key: { ...key, name: "has space" } })).toThrow(
      /key\.name/,
    );
  });

  it("refuses an unknown type", () => {
    expect(() => validateEventData("Bogus", {})).toThrow(UnknownEventTypeError);
  });

  it("upcasts AttemptFailed v1 (error string) to v2 (error kind and message)", () => {
    expect(currentSchemaVersion("AttemptFailed")).toBe(2);
    const e = upcastEventData("AttemptFailed", 1, {
      attempt: 1,
      token: "tok-12345678",
      error: "exit code 3",
      exitCode: 3,
    });
    expect(e.type).toBe("AttemptFailed");
    expect(e.data).toMatchObject({ error: { kind: "exit_code", message: "exit code 3" }, exitCode: 3 });
  });

  it("refuses a version from the future or below 1", () => {
    expect(() => upcastEventData("AttemptFailed", 3, {})).toThrow(UnsupportedSchemaVersionError);
    expect(() => upcastEventData("Note", 0, { text: "x" })).toThrow(UnsupportedSchemaVersionError);
  });
});

describe("a TaskDeclared event around a spec its declaration just parsed", () => {
  const declared = () => {
    const result = validateDeclarations([
      {
        filename: "t.yaml",
        document: {
          tasks: [
            {
              project: "sales",
              account: "acme",
              name: "orders_raw",
              cron: "0 * * * *",
              startDate: "2026-01-01T00:00:00Z",
              operator: { type: "shell", command: "echo {{ logical_date }}" },
              retry: { maxAttempts: 3 },
              config: { region: "eu", nested: { a: [1, 2] } },
            },
          ],
        },
      },
    ]);
    if (!result.ok) throw new Error("invalid");
    const spec = result.tasks[0] as NonNullable<(typeof result.tasks)[0]>;
    return {
      key: spec.key,
      spec,
      logicalDate: "2026-01-01T00:00:00.000Z",
      nextRunDate: "2026-01-01T01:00:00.000Z",
    };
  };

  it("is taken as is, and is what parsing it again would give", () => {
    const data = declared();
    expect(validateEventData("TaskDeclared", data)).toBe(data);
    const parsedAgain = validateEventData("TaskDeclared", structuredClone(data));
    expect(JSON.stringify(parsedAgain)).toBe(JSON.stringify(data));
  });

  it("is parsed when anything around the spec is not as the schema gives it", () => {
    expect(() => validateEventData("TaskDeclared", { ...declared(), logicalDate: "2026-01-01" })).toThrow(
      ValidationError,
    );
    expect(() => validateEventData("TaskDeclared", { ...declared(), extra: 1 })).toThrow(ValidationError);
    const { key: _key, ...rest } = declared();
    expect(() =>
      validateEventData("TaskDeclared", { ...rest, key: { ...key, name: "other" } }),
    ).not.toThrow();
    expect(validateEventData("TaskDeclared", { ...rest, key: { ...key, name: "other" } })).not.toBe(rest);
    // Not in the schema's order: parsed, into that order.
    const { spec, logicalDate, nextRunDate, key: k } = declared();
    const reordered = { spec, key: k, logicalDate, nextRunDate };
    expect(Object.keys(validateEventData("TaskDeclared", reordered) as object)).toEqual([
      "key",
      "spec",
      "logicalDate",
      "nextRunDate",
    ]);
  });
});

describe("golden log", () => {
  // Events recorded by earlier versions: every one must still be readable by the current code.
  const lines = readFileSync(
    fileURLToPath(new URL("../../../test/fixtures/golden-v1.jsonl", import.meta.url)),
    "utf8",
  )
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; schemaVersion: number; data: unknown });

  it("decodes every recorded event at its recorded version", () => {
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const e = upcastEventData(line.type, line.schemaVersion, line.data);
      expect(e.type).toBe(line.type);
      // The upcast result is valid data of today's schema.
      expect(validateEventData(e.type, e.data)).toEqual(e.data);
    }
  });

  it("reads old failures with the new error shape", () => {
    const failures = lines
      .filter((l) => l.type === "AttemptFailed")
      .map((l) => upcastEventData(l.type, l.schemaVersion, l.data).data as { error: { kind: string } });
    expect(failures.map((f) => f.error.kind)).toEqual(["exit_code", "unknown", "timeout"]);
  });
});
