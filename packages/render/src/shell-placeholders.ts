import { type Liquid, type TagToken, Tokenizer, TokenKind, type TopLevelToken } from "liquidjs";
import { SHELL_CONTEXT_WORDS, type ShellContext, type ShellPiece, scanShell } from "./shell-context.js";

/**
 * A placeholder of a shell command that stands where its value would not be one word: inside
 * quotes, a here-document, backquotes, `$(...)`, a comment... (see `scanShell`). `text` is the
 * placeholder as written (`{{ params.note }}`); `line` and `column` (1-based) where it starts.
 */
export interface MisplacedPlaceholder {
  readonly text: string;
  readonly kind: "output" | "tag";
  /** An output's expression (`params.note | upcase`), or a tag's name (`if`). */
  readonly expression: string;
  readonly context: ShellContext;
  readonly line: number;
  readonly column: number;
}

/** Tags that neither output nor choose what is output: where they stand does not matter. */
const TRANSPARENT_TAGS = new Set(["raw", "endraw", "comment", "endcomment", "#"]);

/**
 * Every placeholder of a shell command template that does not stand in plain words. A tag
 * (`{% if %}`, `{% for %}`, `{% echo %}`...) must stand in plain words too: a branch or a loop
 * could otherwise open a quote that the text after it does not see. Throws what the tokenizer
 * throws for a template that does not parse (the render says it better).
 */
export function misplacedPlaceholders(template: string, liquid: Liquid): MisplacedPlaceholder[] {
  const tokens: TopLevelToken[] = new Tokenizer(template, liquid.options.operators).readTopLevelTokens(
    liquid.options,
  );
  const pieces: ShellPiece[] = [];
  const holes: Array<{ token: TopLevelToken; kind: "output" | "tag"; expression: string }> = [];
  let inComment = false;
  for (const token of tokens) {
    if (token.kind === TokenKind.HTML) {
      if (!inComment) pieces.push((token as unknown as { getContent(): string }).getContent());
      continue;
    }
    if (token.kind === TokenKind.Tag) {
      const name = (token as TagToken).name;
      if (name === "comment") inComment = true;
      if (name === "endcomment") inComment = false;
      if (inComment || TRANSPARENT_TAGS.has(name)) continue;
      pieces.push({ hole: holes.length });
      holes.push({ token, kind: "tag", expression: name });
      continue;
    }
    if (inComment) continue;
    const content = (token as unknown as { content: string }).content;
    pieces.push({ hole: holes.length });
    holes.push({ token, kind: "output", expression: content.trim() });
  }
  const contexts = scanShell(pieces);
  const out: MisplacedPlaceholder[] = [];
  for (const [n, { token, kind, expression }] of holes.entries()) {
    const context = contexts.get(n) ?? "plain";
    if (context === "plain") continue;
    const before = template.slice(0, token.begin);
    const line = before.split("\n").length;
    const column = token.begin - before.lastIndexOf("\n");
    out.push({ text: template.slice(token.begin, token.end), kind, expression, context, line, column });
  }
  return out;
}

/**
 * What to say of a misplaced placeholder: where it stands, why that is refused, and the fix:
 * the variable that holds its value (`envName` says which, when there is one), or moving it out.
 */
export function misplacedMessage(
  p: MisplacedPlaceholder,
  envName: (expression: string) => string | undefined,
  others: number,
): string {
  const where = SHELL_CONTEXT_WORDS[p.context];
  const more = others > 0 ? ` (and ${others} more placeholder${others === 1 ? "" : "s"} like it)` : "";
  if (p.kind === "tag") {
    return (
      `the ${p.text} tag stands ${where}${more}: in a shell command, tags must stand in plain words ` +
      "(outside quotes, here-documents, backquotes, $(...) and comments), so that no branch can change how " +
      "a value is quoted; use the environment variables instead (see docs/declarations.md)"
    );
  }
  const variable = envName(p.expression.split("|")[0] ?? "");
  const filtered = p.expression.includes("|");
  const fix = variable
    ? `use "$${variable}" instead (the same value, from the environment${filtered ? "; apply the filter in the shell" : ""})`
    : "move it out of there: standing in plain words, its value is quoted as one word";
  return (
    `${p.text} stands ${where}${more}, where its value would not be one quoted word and could run as ` +
    `shell code; ${fix}`
  );
}
