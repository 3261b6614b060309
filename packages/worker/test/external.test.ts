import { describe, expect, it } from "vitest";
import { runOperator } from "../src/operators/index.js";
import { parseOperator } from "../src/operators/spec.js";

/** An outside task (`operator: { type: external }`) is never dispatched; a worker refuses one all the same. */
describe("an external operator on a worker", () => {
  it("is refused when a command carrying one is read, and never run", async () => {
    expect(() => parseOperator({ type: "external" })).toThrow(/an external task is never run/);
    await expect(runOperator({ type: "external" }, {} as Parameters<typeof runOperator>[1])).rejects.toThrow(
      /never run by a worker/,
    );
  });
});
