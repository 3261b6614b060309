import { describe, expect, it } from "vitest";
import { href, parseHash } from "../src/router.js";

describe("the web UI's routes", () => {
  it("a hash names a page, its argument and its query", () => {
    const r = parseHash("#/task/sales%2Facme%2Forders%2FALL?at=42");
    expect(r.page).toBe("task");
    expect(r.arg).toBe("sales/acme/orders/ALL");
    expect(r.q.get("at")).toBe("42");
    expect(parseHash("").page).toBe("grid");
  });

  it("a link leaves empty values out, and reads back as it was made", () => {
    expect(href("grid", "", { at: null, project: "ops", state: "", page: 0 })).toBe(
      "#/grid?project=ops&page=0",
    );
    const link = href("run", "nightly@2026-12-01T00:00Z", { at: "7" });
    const r = parseHash(link);
    expect([r.page, r.arg, r.q.get("at")]).toEqual(["run", "nightly@2026-12-01T00:00Z", "7"]);
  });
});
