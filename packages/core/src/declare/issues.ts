import type { FieldIssue } from "../errors.js";
import { ValidationError } from "../errors.js";
import { suggestField } from "./suggest.js";

export type DeclarationIssueCode =
  | "document"
  | "unknown_field"
  | "schema"
  | "required"
  | "cron"
  | "timezone"
  | "date"
  | "operator"
  | "config"
  | "connection_unknown"
  | "connection_operator"
  | "duplicate"
  | "parent"
  | "parent_missing"
  | "cycle"
  | "workflow"
  | "template"
  | "credential";

/**
 * One problem found in a set of declaration files. `path` is the field inside `file`
 * (`workflows[0].tasks[2].cron`); `task` is the key of the task concerned, when one is, and the
 * message starts with it too so the plain `path: message` text names both. `line` and `column`
 * are set for a template problem: where in the template's text it is.
 */
export interface DeclarationIssue extends FieldIssue {
  readonly severity: "error" | "warning";
  readonly code: DeclarationIssueCode;
  readonly file: string;
  readonly task?: string;
  readonly line?: number;
  readonly column?: number;
  /** What a misspelt name most likely stands for (a parent's nearest known task keys), best first. */
  readonly suggestions?: readonly string[];
}

/** `file: path: message`, one line per issue, for terminals and logs. */
export function formatDeclarationIssue(issue: DeclarationIssue): string {
  const where = issue.path ? `${issue.file}: ${issue.path}` : issue.file;
  return `${issue.severity === "warning" ? "warning: " : ""}${where}: ${issue.message}`;
}

/** The errors of a failed validation as one `ValidationError` (nothing was written). */
export function declarationValidationError(errors: readonly DeclarationIssue[]): ValidationError {
  return new ValidationError(
    "declarations",
    errors.map((e) => ({ path: e.path ? `${e.file}: ${e.path}` : e.file, message: e.message })),
  );
}

/** A place in a declaration file: the file, and the field path in it. */
export interface Located {
  readonly file: string;
  readonly path: string;
}

/** Where in a template's text a problem is. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

/** What `zod` says of one problem, as far as the collector reads it. */
export interface ZodIssueLike {
  readonly code?: string;
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
  readonly keys?: readonly string[];
}

/**
 * The issues of one validation, gathered in the order they are found. Each check is handed the
 * collector and goes on after what it reports, so every problem of a set of files comes out in
 * one round; a check that needs an earlier one to have passed asks `errorCount`.
 */
export class IssueCollector {
  readonly errors: DeclarationIssue[] = [];
  readonly warnings: DeclarationIssue[] = [];
  /**
   * A workflow's own field found wrong for one of its tasks, which all inherit it (an endDate
   * before its startDate, an unknown connection): where it stands in `errors`, and for how many
   * tasks, by code, place and message.
   */
  private readonly inherited = new Map<string, { index: number; task: string; tasks: number }>();
  /** Every error reported, those said once for many tasks counted each time. */
  private reported = 0;

  /** The errors reported so far, each counted (a check asks whether it added any). */
  get errorCount(): number {
    return this.reported;
  }

  /**
   * An error; `task` (the key of the task concerned) also starts the message. The same error at
   * a workflow's own field for each of its tasks is said once, naming the first task and how many
   * more it concerns.
   */
  error(
    code: DeclarationIssueCode,
    at: Located,
    message: string,
    task?: string,
    position?: TextPosition,
  ): void {
    this.reported += 1;
    if (task !== undefined && WORKFLOW_FIELD.test(at.path)) {
      const key = `${code}\n${at.file}\n${at.path}\n${message}`;
      const seen = this.inherited.get(key);
      if (seen) {
        seen.tasks += 1;
        const more = seen.tasks - 1;
        const first = this.errors[seen.index] as DeclarationIssue;
        this.errors[seen.index] = {
          ...first,
          message: `${seen.task} and ${more} more ${more === 1 ? "task" : "tasks"} of its workflow: ${message}`,
        };
        return;
      }
      this.inherited.set(key, { index: this.errors.length, task, tasks: 1 });
    }
    this.errors.push(issue("error", code, at, message, task, position));
  }

  /** A warning: reported, but the set is still declared. */
  warning(
    code: DeclarationIssueCode,
    at: Located,
    message: string,
    task?: string,
    extra?: { readonly suggestions: readonly string[] },
  ): void {
    this.warnings.push({ ...issue("warning", code, at, message, task), ...extra });
  }

  /** A schema's problems with the value at `at`, each at its own field below it. */
  schema(at: Located, issues: ReadonlyArray<ZodIssueLike>, task: string | undefined): void {
    for (const zodIssue of issues) {
      for (const i of describeZodIssue(zodIssue)) {
        this.error(i.code, { file: at.file, path: joinPath(at.path, ...i.path) }, i.message, task);
      }
    }
  }
}

/** A path to a workflow's own field (`workflows[0].endDate`), not to one of its tasks'. */
const WORKFLOW_FIELD = /^workflows\[\d+\]\.(?!tasks\[)/;

function issue(
  severity: "error" | "warning",
  code: DeclarationIssueCode,
  at: Located,
  message: string,
  task: string | undefined,
  position?: TextPosition,
): DeclarationIssue {
  return {
    severity,
    code,
    file: at.file,
    path: at.path,
    message: task ? `${task}: ${message}` : message,
    ...(task ? { task } : {}),
    ...(position ? { line: position.line, column: position.column } : {}),
  };
}

function describeZodIssue(
  issue: ZodIssueLike,
): Array<{ code: DeclarationIssueCode; path: PropertyKey[]; message: string }> {
  if (issue.code === "unrecognized_keys" && issue.keys) {
    return issue.keys.map((k) => {
      const hint = suggestField(k);
      return {
        code: "unknown_field" as const,
        path: [...issue.path, k],
        message: `unknown field "${k}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
      };
    });
  }
  const field = issue.path.length > 0 ? String(issue.path[issue.path.length - 1]) : "value";
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) {
    return [{ code: "required", path: [...issue.path], message: `${field} is required` }];
  }
  // (A rule about the whole item, such as a sink's one-of, is said as is, at the item.)
  const message = issue.path.length > 0 ? `${field}: ${issue.message}` : issue.message;
  return [{ code: "schema", path: [...issue.path], message }];
}

/** `base` with field names and list indexes appended: `tasks[0]` + `operator`, 2 -> `tasks[0].operator[2]`. */
export function joinPath(base: string, ...segments: PropertyKey[]): string {
  let out = base;
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else out += out === "" ? String(s) : `.${String(s)}`;
  }
  return out;
}
