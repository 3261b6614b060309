import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { codeBlocks, docPages, readPage } from "./markdown.js";

/**
 * Every declaration the README and the docs show (a YAML block with `tasks:`, `workflows:` or
 * `connections:` at its top level) is one `chronolog declare --check` takes, unless the page
 * marks it `<!-- not run: why -->`: a reader who copies one gets what the page says.
 */
const left = new Leftovers();
afterAll(() => left.clear());

const DECLARATION = /^(tasks|workflows|connections):/m;

describe("the declarations the docs show", () => {
  for (const page of docPages()) {
    const blocks = codeBlocks(readPage(page)).filter(
      (b) => (b.lang === "yaml" || b.lang === "yml") && DECLARATION.test(b.text) && b.notRun === undefined,
    );
    if (blocks.length === 0) continue;
    it(`${page}: each is declared (--check)`, () => {
      const dir = tempDataDir("docs-declarations");
      left.dirs.push(dir);
      for (const b of blocks) {
        const file = join(dir, `line-${b.line}.yaml`);
        writeFileSync(file, `${b.text}\n`);
        const r = chronolog(dir, ["declare", "--check", file]);
        expect(r.code, `${page}:${b.line}: ${r.stderr}`).toBe(0);
      }
    });
  }
});
