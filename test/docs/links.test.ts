import { existsSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { docPages, headingAnchors, linkTargets, ROOT, readPage } from "./markdown.js";

/**
 * Every relative link of the README and docs/ leads somewhere: to a file that exists and, when
 * it names a heading (`page.md#anchor`), to a heading of that page. And every page of docs/ can
 * be found from the README.
 */
function brokenLinks(page: string): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(readPage(page))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [path, anchor] = target.split("#", 2) as [string, string | undefined];
    const file = path === "" ? join(ROOT, page) : join(ROOT, dirname(page), decodeURI(path));
    if (!existsSync(file)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor === undefined || !file.endsWith(".md") || statSync(file).isDirectory()) continue;
    const anchors = headingAnchors(readPage(relative(ROOT, file)));
    if (!anchors.has(decodeURIComponent(anchor))) broken.push(`${target}: no heading #${anchor}`);
  }
  return broken;
}

describe("the links of the README and docs/", () => {
  for (const page of docPages()) {
    it(`${page}: every relative link points to a file and heading that exist`, () => {
      expect(brokenLinks(page)).toEqual([]);
    });
  }

  it("the README links every page of docs/", () => {
    const linked = new Set(linkTargets(readPage("README.md")).map((t) => t.split("#")[0]));
    const missing = docPages()
      .filter((p) => p !== "README.md")
      .filter((p) => !linked.has(p));
    expect(missing).toEqual([]);
  });
});
