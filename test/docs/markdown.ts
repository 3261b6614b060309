import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The checkout's root, and the markdown pages the docs tests read: the README and docs/*.md. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export function docPages(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", ...docs];
}

export function readPage(page: string): string {
  return readFileSync(join(ROOT, page), "utf8");
}

/** A fenced code block: its language, its text, where it starts, and a `not run` reason if marked. */
export interface CodeBlock {
  readonly lang: string;
  readonly text: string;
  readonly line: number;
  readonly notRun: string | undefined;
}

/** The marker a page puts just before a fence whose commands cannot run here. */
const NOT_RUN = /^<!--\s*not run:\s*(.*?)\s*-->$/;

/**
 * Every fenced block of a page, in order. A block is marked not to be run by an HTML comment
 * `<!-- not run: why -->` on the last non-blank line before its fence.
 */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  let lastText = "";
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i] as string);
    if (!open) {
      if ((lines[i] as string).trim() !== "") lastText = (lines[i] as string).trim();
      continue;
    }
    const fence = open[2] as string;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !(lines[j] as string).trimStart().startsWith(fence)) {
      body.push(lines[j] as string);
      j++;
    }
    blocks.push({
      lang: (open[3] as string).toLowerCase(),
      text: body.join("\n"),
      line: i + 1,
      notRun: NOT_RUN.exec(lastText)?.[1],
    });
    lastText = "";
    i = j;
  }
  return blocks;
}

/** The page's text outside fenced blocks and inline code, where links are. */
export function proseOf(markdown: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && line.trimStart().startsWith(fence)) fence = undefined;
      out.push("");
    } else if (marker) {
      fence = marker;
      out.push("");
    } else {
      out.push(line.replace(/`[^`]*`/g, ""));
    }
  }
  return out.join("\n");
}

/** The targets of the page's inline links and images, `[text](target)` and `![alt](target)`. */
export function linkTargets(markdown: string): string[] {
  const prose = proseOf(markdown);
  const targets: string[] = [];
  for (const m of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push(m[1] as string);
  }
  return targets;
}

/**
 * The anchors GitHub gives the page's headings: lower case, punctuation other than `-` and `_`
 * dropped, spaces made `-`; a repeated one gets `-1`, `-2`...
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseOfHeadings(markdown)) {
    const base = line
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .trim()
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The text of each ATX heading outside fenced blocks, with its inline code's backquotes dropped. */
function proseOfHeadings(markdown: string): string[] {
  const headings: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && line.trimStart().startsWith(fence)) fence = undefined;
      continue;
    }
    if (marker) {
      fence = marker;
      continue;
    }
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) headings.push((h[1] as string).replace(/`/g, ""));
  }
  return headings;
}
