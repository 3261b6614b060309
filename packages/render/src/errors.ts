import { ChronologError } from "@chronolog/core";

export type TemplateProblem =
  /** A variable (or a property of one) that the context does not have: `confg`, `config.tabel`. */
  | "undefined_variable"
  /** A filter that is not registered: `{{ x | shell_qoute }}`. */
  | "unknown_filter"
  /** The template does not parse: an unclosed `{{`, a bad expression, a forbidden tag. */
  | "syntax"
  /** A render, memory or template-size limit was exceeded. */
  | "limit"
  /**
   * A placeholder or tag of a shell command stands where the shell would not read its value as
   * one word (inside quotes, a here-document, `$(...)`...).
   */
  | "quoting"
  /** Anything else that failed while rendering (a filter that threw). */
  | "render"
  /** The render context itself is invalid (a bad logical date or time zone). */
  | "context";

/** A payload template that cannot be rendered. Nothing was dispatched. */
export class TemplateError extends ChronologError {
  readonly type = "template" as const;
  constructor(
    /** The operator field, e.g. `operator.command` or `operator.args.tables[1]`. */
    readonly field: string,
    readonly problem: TemplateProblem,
    /** What went wrong, without the location. */
    readonly detail: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(`${field}: ${detail}${line !== undefined ? ` (line ${line}, column ${column ?? 1})` : ""}`);
    this.name = "TemplateError";
  }
}
