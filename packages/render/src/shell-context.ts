/**
 * Where a placeholder stands in a shell command, by POSIX `sh` quoting rules.
 *
 * A value rendered into a shell command is single-quoted (`'it'\''s'`): one word, whatever it
 * holds, but only where the shell reads plain words. Inside single or double quotes, `$'...'`,
 * backquotes, `$(...)`, `$((...))`, `${...}`, a here-document (its body or its delimiter), a
 * comment, right after a backslash or a `$`, the quotes of the value no longer delimit it, and a
 * value such as `$(id)` or `'; id; '` runs as code. `scanShell` says, for each placeholder of a
 * command, in which of those it stands (or that it stands in plain words).
 *
 * The scanner reads what a shell reads: single quotes (nothing is special inside), double quotes
 * (`\` escapes `$`, `` ` ``, `"`, `\` and newline; `$(`, `${`, `$((` and backquotes nest), `$'...'`
 * (backslash escapes), backquotes (`\` escapes), `$(...)` nested to any depth (parentheses counted;
 * `case` ... `esac` patterns are not taken for its end), `$((...))`, `${...}`, `<<WORD`,
 * `<<-WORD`, quoted delimiters (`<<'EOF'`, `<<"EOF"`, `<<\EOF`), several here-documents on one
 * line, `<<<` (not a here-document), backslash escapes and line continuations, and comments
 * (`#` at the start of a word, up to the end of the line; quotes inside are not read).
 *
 * Where the reading is uncertain it errs towards "not plain": a word `case` taken for the start
 * of a case command keeps a `$(...)` open longer, so more placeholders are refused, not fewer.
 */

/** Where a placeholder stands. Only `plain` is safe for a value. */
export type ShellContext =
  | "plain"
  | "single_quotes"
  | "double_quotes"
  | "ansi_c_quotes"
  | "backquotes"
  | "command_substitution"
  | "arithmetic"
  | "parameter_expansion"
  | "here_document"
  | "here_document_delimiter"
  | "comment"
  | "backslash"
  | "dollar";

/** How a context is said in a message: "inside double quotes". */
export const SHELL_CONTEXT_WORDS: Readonly<Record<ShellContext, string>> = {
  plain: "in plain words",
  single_quotes: "inside single quotes",
  double_quotes: "inside double quotes",
  ansi_c_quotes: "inside $'...' quotes",
  backquotes: "inside backquotes",
  command_substitution: "inside $(...)",
  arithmetic: "inside $((...))",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's parameter expansion, said
  parameter_expansion: "inside ${...}",
  here_document: "in a here-document",
  here_document_delimiter: "in a here-document's delimiter",
  comment: "in a comment",
  backslash: "right after a backslash",
  dollar: "right after a $",
};

/** A command as the scanner reads it: literal text, and holes where values will be. */
export type ShellPiece = string | { readonly hole: number };

type Frame =
  | { kind: "top" }
  | { kind: "single" }
  | { kind: "double" }
  | { kind: "ansi" }
  | { kind: "back" }
  | { kind: "command"; depth: number; cases: number }
  | { kind: "arith"; depth: number }
  | { kind: "param" }
  | { kind: "comment" }
  | {
      kind: "delimiter";
      text: string;
      started: boolean;
      quoted: boolean;
      strip: boolean;
      quote: "" | "'" | '"';
    }
  | { kind: "heredoc"; doc: HereDoc; line: string; lineHasHole: boolean };

interface HereDoc {
  readonly delimiter: string;
  /** `<<-`: leading tabs are stripped from each line, the delimiter's included. */
  readonly strip: boolean;
  /** A quoted delimiter: the body is read as is (no line continuations). */
  readonly quoted: boolean;
}

const FRAME_CONTEXT: Readonly<Record<Frame["kind"], ShellContext>> = {
  top: "plain",
  single: "single_quotes",
  double: "double_quotes",
  ansi: "ansi_c_quotes",
  back: "backquotes",
  command: "command_substitution",
  arith: "arithmetic",
  param: "parameter_expansion",
  comment: "comment",
  delimiter: "here_document_delimiter",
  heredoc: "here_document",
};

/** Characters that end a word outside quotes. */
const BREAKS = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);

/**
 * The context of each hole of a command, by hole number. A hole is taken as part of a word
 * (what a quoted value is). Pure; never throws, whatever the text.
 */
export function scanShell(pieces: readonly ShellPiece[]): Map<number, ShellContext> {
  const units: Array<string | number> = [];
  for (const p of pieces) {
    if (typeof p === "string") for (const ch of p) units.push(ch);
    else units.push(p.hole);
  }
  const found = new Map<number, ShellContext>();
  const stack: Frame[] = [{ kind: "top" }];
  const pending: HereDoc[] = [];
  let escaped = false; // the next unit is escaped by a backslash
  let afterDollar = false; // the last unit was a `$` that starts nothing
  let wordStart = true; // the next unit starts a word (outside quotes)
  let word = ""; // the unquoted word read so far in a code frame (for case/esac)

  const top = () => stack[stack.length - 1] as Frame;
  const at = (i: number) => units[i];

  const endWord = (frame: Frame) => {
    if (frame.kind === "command") {
      if (word === "case") frame.cases += 1;
      else if (word === "esac" && frame.cases > 0) frame.cases -= 1;
    }
    word = "";
  };

  /** After a newline read in a code frame: here-documents announced on the line begin. */
  const startHereDocs = () => {
    const doc = pending.shift();
    if (doc) stack.push({ kind: "heredoc", doc, line: "", lineHasHole: false });
  };

  /** `$` at `i` in a frame where expansions happen; returns how many units it took. */
  const dollar = (i: number, inDouble: boolean): number => {
    const next = at(i + 1);
    if (next === "(" && at(i + 2) === "(") {
      stack.push({ kind: "arith", depth: 2 });
      return 3;
    }
    if (next === "(") {
      stack.push({ kind: "command", depth: 0, cases: 0 });
      wordStart = true;
      word = "";
      return 2;
    }
    if (next === "{") {
      stack.push({ kind: "param" });
      return 2;
    }
    if (!inDouble && next === "'") {
      stack.push({ kind: "ansi" });
      return 2;
    }
    if (!inDouble && next === '"') {
      stack.push({ kind: "double" });
      return 2;
    }
    afterDollar = true;
    return 1;
  };

  let i = 0;
  while (i < units.length) {
    const u = units[i] as string | number;
    const frame = top();

    if (typeof u === "number") {
      let context = FRAME_CONTEXT[frame.kind];
      if (context === "plain" && escaped) context = "backslash";
      else if (context === "plain" && afterDollar) context = "dollar";
      // The first context a hole is found in stands (a hole is reported once).
      if (!found.has(u)) found.set(u, context);
      if (frame.kind === "heredoc") frame.lineHasHole = true;
      if (frame.kind === "delimiter") {
        frame.started = true;
        frame.quoted = true;
      }
      escaped = false;
      afterDollar = false;
      wordStart = false;
      word += "\u0000";
      i += 1;
      continue;
    }
    afterDollar = false;

    switch (frame.kind) {
      case "single":
        if (u === "'") stack.pop();
        i += 1;
        continue;
      case "ansi":
        if (escaped) escaped = false;
        else if (u === "\\") escaped = true;
        else if (u === "'") stack.pop();
        i += 1;
        continue;
      case "back":
        if (escaped) escaped = false;
        else if (u === "\\") escaped = true;
        else if (u === "`") stack.pop();
        i += 1;
        continue;
      case "comment":
        if (u === "\n") {
          stack.pop();
          continue; // the newline is the enclosing frame's
        }
        i += 1;
        continue;
      case "heredoc": {
        if (u !== "\n") {
          frame.line += u;
          i += 1;
          continue;
        }
        if (!frame.doc.quoted && /(^|[^\\])(\\\\)*\\$/.test(frame.line)) {
          // A line continuation: the next line is part of this one.
          frame.line = frame.line.slice(0, -1);
          i += 1;
          continue;
        }
        const line = frame.doc.strip ? frame.line.replace(/^\t+/, "") : frame.line;
        const ends = !frame.lineHasHole && line === frame.doc.delimiter;
        frame.line = "";
        frame.lineHasHole = false;
        i += 1;
        if (ends) {
          stack.pop();
          startHereDocs();
          wordStart = true;
        }
        continue;
      }
      case "delimiter": {
        if (frame.quote === "'") {
          if (u === "'") frame.quote = "";
          else frame.text += u;
          i += 1;
          continue;
        }
        if (frame.quote === '"') {
          if (escaped) {
            escaped = false;
            frame.text += u;
          } else if (u === "\\") escaped = true;
          else if (u === '"') frame.quote = "";
          else frame.text += u;
          i += 1;
          continue;
        }
        if (escaped) {
          escaped = false;
          frame.text += u;
          frame.started = true;
          i += 1;
          continue;
        }
        if (!frame.started && (u === " " || u === "\t")) {
          i += 1;
          continue;
        }
        if (u === "\\") {
          escaped = true;
          frame.quoted = true;
          i += 1;
          continue;
        }
        if (u === "'" || u === '"') {
          frame.quote = u;
          frame.quoted = true;
          frame.started = true;
          i += 1;
          continue;
        }
        if (BREAKS.has(u)) {
          stack.pop();
          if (frame.started)
            pending.push({ delimiter: frame.text, strip: frame.strip, quoted: frame.quoted });
          wordStart = true;
          continue; // the break is the enclosing frame's
        }
        frame.text += u;
        frame.started = true;
        i += 1;
        continue;
      }
      case "double":
        if (escaped) escaped = false;
        else if (u === "\\") escaped = true;
        else if (u === '"') stack.pop();
        else if (u === "`") stack.push({ kind: "back" });
        else if (u === "$") {
          i += dollar(i, true);
          continue;
        }
        i += 1;
        continue;
      case "param":
        if (escaped) escaped = false;
        else if (u === "\\") escaped = true;
        else if (u === "}") stack.pop();
        else if (u === '"') stack.push({ kind: "double" });
        else if (u === "'" && !stack.some((f) => f.kind === "double")) stack.push({ kind: "single" });
        else if (u === "`") stack.push({ kind: "back" });
        else if (u === "$") {
          i += dollar(
            i,
            stack.some((f) => f.kind === "double"),
          );
          continue;
        }
        i += 1;
        continue;
      case "arith":
        if (u === "(") frame.depth += 1;
        else if (u === ")") {
          frame.depth -= 1;
          if (frame.depth === 0) stack.pop();
        } else if (u === "$") {
          i += dollar(i, true);
          continue;
        } else if (u === "`") stack.push({ kind: "back" });
        i += 1;
        continue;
      case "top":
      case "command":
        break;
    }

    // A code frame: the script itself, or a `$(...)` in it.
    if (escaped) {
      escaped = false;
      // A line continuation joins the lines: the word goes on.
      if (u !== "\n") {
        wordStart = false;
        word += u;
      }
      i += 1;
      continue;
    }
    if (BREAKS.has(u)) endWord(frame);
    if (u === "\\") {
      escaped = true;
      i += 1;
      continue;
    }
    if (u === "#" && wordStart) {
      stack.push({ kind: "comment" });
      i += 1;
      continue;
    }
    if (u === "'") stack.push({ kind: "single" });
    else if (u === '"') stack.push({ kind: "double" });
    else if (u === "`") stack.push({ kind: "back" });
    else if (u === "$") {
      wordStart = false;
      word += u;
      i += dollar(i, false);
      continue;
    } else if (u === "<" && at(i + 1) === "<") {
      if (at(i + 2) === "<") {
        i += 3; // `<<<`: a here-string, a word like any other
        wordStart = true;
        continue;
      }
      const strip = at(i + 2) === "-";
      stack.push({ kind: "delimiter", text: "", started: false, quoted: false, strip, quote: "" });
      i += strip ? 3 : 2;
      continue;
    } else if (u === "\n") {
      i += 1;
      wordStart = true;
      if (pending.length > 0) startHereDocs();
      continue;
    } else if (frame.kind === "command" && u === "(") frame.depth += 1;
    else if (frame.kind === "command" && u === ")") {
      if (frame.depth > 0) frame.depth -= 1;
      else if (frame.cases === 0) {
        stack.pop();
        endWord(top());
        wordStart = false;
        i += 1;
        continue;
      }
    }
    if (BREAKS.has(u)) wordStart = true;
    else {
      wordStart = false;
      if (u !== "'" && u !== '"' && u !== "`") word += u;
    }
    i += 1;
  }
  return found;
}
