import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DomainEvent } from "@chronolog/core";
import { type EventLog, WrongExpectedRevisionError } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { ConflictRetriesExhaustedError, handleCommand } from "@chronolog/scheduler";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/** The command handler on a real SQLite log: read, decide, append with the expected revision. */
let dir: string;
let log: EventLog;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-command-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
});
afterEach(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

const STREAM = "connection-pg";
const declared = (n: number): DomainEvent => ({
  type: "ConnectionDeclared",
  data: { spec: { name: "pg", operators: ["shell"], maxParallelism: n } },
});

/** A command that appends one event at the revision it reads (from the log when fresh, else `stale`). */
function command(stale: bigint | "no_stream", onConflict?: "retry" | "give_up", maxRetries?: number) {
  const reads: boolean[] = [];
  return {
    reads,
    command: {
      name: "declare pg",
      read: async (fresh: boolean) => {
        reads.push(fresh);
        return fresh ? await log.streamRevision(STREAM) : stale;
      },
      decide: (revision: bigint | "no_stream") => ({
        writes: [{ streamId: STREAM, events: [declared(3)], expectedRevision: revision }],
        result: revision,
      }),
      ...(onConflict ? { onConflict: () => onConflict } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
    },
  };
}

describe("handleCommand", () => {
  it("writes what the decision says, at the revision it was made on", async () => {
    const { command: c } = command("no_stream");
    const outcome = await handleCommand(log, c);
    expect(outcome).toMatchObject({ kind: "written", result: "no_stream" });
    expect((await log.readStream(STREAM)).map((e) => e.type)).toEqual(["ConnectionDeclared"]);
  });

  it("writes nothing when the decision has nothing to write", async () => {
    const outcome = await handleCommand(log, {
      name: "nothing",
      read: () => null,
      decide: () => ({ writes: [], result: "nothing to do" }),
    });
    expect(outcome).toEqual({ kind: "unchanged", result: "nothing to do" });
    expect(await log.headPosition()).toBe(-1n);
  });

  it("gives a conflict back by default, having written nothing", async () => {
    await log.append(STREAM, [declared(1)], { expectedRevision: "no_stream" });
    const { command: c, reads } = command("no_stream");
    const outcome = await handleCommand(log, c);
    expect(outcome.kind).toBe("conflict");
    expect(outcome.kind === "conflict" && outcome.error).toBeInstanceOf(WrongExpectedRevisionError);
    expect(reads).toEqual([false]);
    expect(await log.readStream(STREAM)).toHaveLength(1);
  });

  it("decides again on fresh state when told to retry", async () => {
    await log.append(STREAM, [declared(1)], { expectedRevision: "no_stream" });
    const { command: c, reads } = command("no_stream", "retry");
    const outcome = await handleCommand(log, c);
    expect(outcome).toMatchObject({ kind: "written", result: 0n });
    expect(reads).toEqual([false, true]);
    expect(await log.readStream(STREAM)).toHaveLength(2);
  });

  it("fails with a typed error when every retry loses", async () => {
    await log.append(STREAM, [declared(1)], { expectedRevision: "no_stream" });
    // A read that always returns the stale revision: every try conflicts.
    const c = { ...command("no_stream", "retry", 2).command, read: () => "no_stream" as const };
    const error = await handleCommand(log, c).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictRetriesExhaustedError);
    expect(error).toMatchObject({ type: "conflict_retries_exhausted", tries: 3 });
    expect(await log.readStream(STREAM)).toHaveLength(1);
  });

  it("passes a refusal of the decision through, writing nothing", async () => {
    const error = await handleCommand(log, {
      name: "refused",
      read: () => null,
      decide: () => {
        throw new Error("refused");
      },
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("refused");
    expect(await log.headPosition()).toBe(-1n);
  });
});
