import { describe, expect, it } from "vitest";
import { parseTaskKey, taskKeySchema } from "../src/index.js";

describe("parseTaskKey", () => {
  it("gives the key the schema gives, the partition ALL by default", () => {
    for (const text of [
      "p/a/n",
      "p/a/n/ALL",
      "p1/acme/t999997",
      "x.y/a-b/c_d=e:f@g+h/2026-12-06",
      `${"a".repeat(128)}/b/c`,
    ])
      expect(parseTaskKey(text)).toEqual({
        ok: true,
        key: taskKeySchema.parse(
          Object.fromEntries(
            ["project", "account", "name", "partition"]
              .map((f, i) => [f, text.split("/")[i]])
              .filter(([, v]) => v !== undefined),
          ),
        ),
      });
    expect(Object.keys((parseTaskKey("p/a/n") as { key: object }).key)).toEqual([
      "project",
      "account",
      "name",
      "partition",
    ]);
  });

  it("names what is wrong with a key it refuses", () => {
    expect(parseTaskKey("p/a")).toEqual({
      ok: false,
      error: 'task key "p/a" must be project/account/name[/partition]',
    });
    expect(parseTaskKey("p//n")).toEqual({ ok: false, error: 'task key "p//n": account must not be empty' });
    expect(parseTaskKey("p/a/n/")).toEqual({
      ok: false,
      error: 'task key "p/a/n/": partition must not be empty',
    });
    expect(parseTaskKey("p/a b/n")).toEqual({
      ok: false,
      error: 'task key "p/a b/n": account may contain only letters, digits and _ . - = : @ +',
    });
    expect(parseTaskKey(`${"a".repeat(129)}/b/c`)).toEqual({
      ok: false,
      error: `task key "${"a".repeat(129)}/b/c": project must be at most 128 characters`,
    });
  });
});
