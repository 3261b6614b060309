import { describe, expect, it } from "vitest";
import { docPages, readPage } from "./markdown.js";

/** A table row's cells: split on the pipes that are not escaped, less the outer ones. */
const cellsOf = (row: string): number => row.split(/(?<!\\)\|/).length - 2;

/**
 * Every row of each table (outside code blocks) has as many cells as the table's header: a row
 * with more or fewer is prose run into the table, or a cell split by a pipe left unescaped.
 */
function ragged(page: string): string[] {
  const found: string[] = [];
  let fence = false;
  let header: number | undefined;
  readPage(page)
    .split("\n")
    .forEach((line, i) => {
      if (line.startsWith("```")) fence = !fence;
      if (fence || !line.startsWith("|")) {
        header = undefined;
        return;
      }
      const cells = cellsOf(line.trimEnd());
      if (header === undefined) header = cells;
      else if (cells !== header) found.push(`line ${i + 1}: ${cells} cells, the header has ${header}`);
    });
  return found;
}

describe("the tables of the README and docs/", () => {
  for (const page of docPages()) {
    it(`${page}: every row has the header's cells`, () => {
      expect(ragged(page)).toEqual([]);
    });
  }
});
