import { explainTask, type TaskState, taskStream } from "@chronolog/core";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { declare } from "../src/declare.js";
import { type Harness, harness, stream, until } from "./harness.js";

/**
 * A report whose consequences cannot be decided (here: the task's schedule cannot be advanced)
 * never wedges the task: the attempt's outcome is recorded all the same, the task's decision
 * says what went wrong, the reconcile loop leaves the attempt alone, the other tasks are
 * served, and a declaration that fixes the schedule lets it move on.
 */
let h: Harness;

async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
afterEach(async () => {
  await h?.close();
});

describe("a task whose schedule cannot be advanced", () => {
  it("has its attempt's success recorded, says why it does not move, and moves once declared again", async () => {
    h = await harness([
      { name: "bad", idempotent: false, command: "sleep 0.5", lease: 1 },
      { name: "good", idempotent: true, command: "sleep 0.5" },
    ]);
    await h.start();
    const id = "p/a/bad/ALL";
    const declared = h.projection.tasks.get(id) as TaskState;
    await until("bad to run", () => h.projection.instances.get(stream("bad"))?.status === "running");
    // While it runs, its schedule becomes one the arithmetic cannot move (as if a library bug
    // made the next slot throw): the success path of its report cannot be decided.
    h.projection.tasks.set(id, { ...declared, spec: { ...declared.spec, cron: "0 99 * * *" } });

    const events = await eventually("bad's outcome in the log", async () => {
      const es = await h.log.readStream(stream("bad"));
      return es.some((e) => e.type === "AttemptSucceeded") ? es : undefined;
    });
    expect(events.map((e) => e.type)).toEqual(["DispatchIntended", "AttemptStarted", "AttemptSucceeded"]);
    const why = explainTask(h.projection, id, Date.now());
    expect(why.condition).toBe("stuck");
    expect(why.reasons[0]).toContain("succeeded (recorded), but the schedule cannot advance past it");
    // The other task was served all along.
    await eventually("good to complete", async () => {
      const es = await h.log.readStream(
        taskStream(h.projection.tasks.get("p/a/good/ALL")?.key ?? declared.key),
      );
      return es.some((e) => e.type === "IntervalCompleted") || undefined;
    });
    // Several leases later the reconcile loop has not turned it into a lease expiry.
    await new Promise((r) => setTimeout(r, 2500));
    const later = await h.log.readStream(stream("bad"));
    expect(later.map((e) => e.type)).toEqual(["DispatchIntended", "AttemptStarted", "AttemptSucceeded"]);
    expect(h.projection.tasks.get(id)?.logicalDate).toBe(declared.logicalDate);

    // Declared again with the schedule as it was: the task records its interval and moves on.
    const yaml = `tasks:\n  - { project: p, account: a, name: bad, cron: "${declared.spec.cron}", startDate: "${declared.spec.startDate}", catchup: false, idempotent: false, leaseSeconds: 1, operator: { type: shell, command: "sleep 0.5" } }\n`;
    await declare(h.log, h.projection, [{ filename: "fix.yaml", document: parse(yaml) }], Date.now());
    await until("bad to advance", () =>
      (h.projection.tasks.get(id)?.prevIntervalStart ?? null) === declared.logicalDate ? true : undefined,
    );
  }, 30_000);
});
