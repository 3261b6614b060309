import { describe, expect, it } from "vitest";
import type { RunCommand } from "../src/protocol.js";
import { harness, runCmd } from "./helpers.js";

const batch = (...messages: RunCommand[]) => ({ kind: "batch" as const, messages });

/** A python task given to a Node worker fails at once, saying where it runs, and runs nothing. */
describe("a python task on a Node worker", () => {
  const python = { type: "python", function: "mypipeline.orders:load", args: { day: "2026-11-28" } };

  it("fails, naming its queue: python tasks run on a Python worker", async () => {
    const { runtime, finished } = harness();
    runtime.handle(batch(runCmd(python, { token: "py-queued", queue: "py" })));
    const report = await finished("py-queued");
    expect(report).toMatchObject({
      kind: "failed",
      error: {
        kind: "exception",
        message:
          "python tasks run on a Python worker (queue py); this Node worker did not run mypipeline.orders:load",
      },
    });
  });

  it("without a queue, says to declare one", async () => {
    const { runtime, finished } = harness();
    runtime.handle(batch(runCmd(python, { token: "py-bare" })));
    const report = await finished("py-bare");
    expect(report.kind).toBe("failed");
    expect(report.kind === "failed" && report.error.message).toBe(
      "python tasks run on a Python worker (queue none declared: give the task a queue: NAME and start a Python worker on it); this Node worker did not run mypipeline.orders:load",
    );
  });
});
