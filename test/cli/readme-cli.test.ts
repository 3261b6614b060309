import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

/** The README's example declaration is one `chronolog declare` takes as it is. */
const left = new Leftovers();
afterAll(() => left.clear());

describe("the README's example declaration", () => {
  it("declares as written", () => {
    const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
    const section = readme.slice(readme.indexOf("### Declarations"));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml, "a yaml block under ### Declarations").toBeDefined();
    const dir = tempDataDir("readme");
    left.dirs.push(dir);
    const file = join(dir, "readme.yaml");
    writeFileSync(file, yaml as string);
    const r = chronolog(dir, ["declare", "--check", file]);
    expect(r.stderr).toContain("check: nothing written");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("task sales/acme/orders_daily_report/ALL: declared");
  });
});
