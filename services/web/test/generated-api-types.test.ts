import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { apiTypes, GENERATED } from "../scripts/api-types.mjs";

/**
 * The UI's types of the API are generated from its OpenAPI document and committed: the UI's
 * type check reads them. A schema changed without regenerating them fails here.
 */
describe("the web UI's generated API types", () => {
  it("are what `npm run gen:api-types` writes for the API as it is", async () => {
    const committed = readFileSync(GENERATED, "utf8");
    const now: string = await apiTypes();
    expect(
      committed === now,
      "services/web/src/generated/api.d.ts is out of date: run `npm run gen:api-types` and commit it",
    ).toBe(true);
  }, 60_000);
});
