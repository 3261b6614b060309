export { type RenderContext, type TemplateVariables, templateVariables } from "./context.js";
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
