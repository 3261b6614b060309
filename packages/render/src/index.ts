export {
  type RenderContext,
  SECRET_PLACEHOLDER,
  SecretRef,
  type TemplateVariables,
  templateVariables,
} from "./context.js";
export {
  BUILTIN_ENV,
  clashingNames,
  configEnvName,
  envNameOf,
  envSuffix,
  paramEnvName,
  taskEnvironment,
} from "./environment.js";
export { TemplateError, type TemplateProblem } from "./errors.js";
export {
  type OutputEscaping,
  type RenderLimits,
  renderOperator,
  renderTemplate,
  renderTemplateWith,
  shellQuote,
} from "./render.js";
export { SHELL_CONTEXT_WORDS, type ShellContext, type ShellPiece, scanShell } from "./shell-context.js";
export { type MisplacedPlaceholder, misplacedPlaceholders } from "./shell-placeholders.js";
