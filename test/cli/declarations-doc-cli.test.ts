import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

/** The example declaration of docs/declarations.md is one `chronolog declare` takes as it is. */
const left = new Leftovers();
afterAll(() => left.clear());

describe("the example declaration of docs/declarations.md", () => {
  it("declares as written", () => {
    const page = readFileSync(fileURLToPath(new URL("../../docs/declarations.md", import.meta.url)), "utf8");
    const section = page.slice(page.indexOf("## A declaration file"));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml, "a yaml block under ## A declaration file").toBeDefined();
    const dir = tempDataDir("docs");
    left.dirs.push(dir);
    const file = join(dir, "declaration.yaml");
    writeFileSync(file, yaml as string);
    const r = chronolog(dir, ["declare", "--check", file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^check, nothing written: a declare would record\n/);
    expect(r.stdout).toContain("task sales/acme/orders_daily_report/ALL: declared");
  });
});
