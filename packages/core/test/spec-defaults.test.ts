import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY, retryPolicySchema } from "../src/index.js";

describe("DEFAULT_RETRY", () => {
  it("is the retry policy's defaults, field for field and in their order", () => {
    const parsed = retryPolicySchema.parse({});
    expect(DEFAULT_RETRY).toStrictEqual(parsed);
    expect(JSON.stringify(DEFAULT_RETRY)).toBe(JSON.stringify(parsed));
    expect(Object.isFrozen(DEFAULT_RETRY)).toBe(true);
  });
});
