export { type Edges, findCycle, findCycles } from "./cycle.js";
export {
  type DeclarationDecision,
  type DeclarationInput,
  type DeclarationOutcome,
  type DeclarationState,
  type DeclarationWrite,
  decideConnectionDeclaration,
  decideDeclaration,
  decideTaskDeclaration,
  decideWorkflowDeclaration,
  type SpecDeclarationDecision,
  type TaskDeclarationDecision,
} from "./decide-declaration.js";
export { deepEqual, diffTaskSpecs, type TaskSpecChange } from "./diff.js";
export {
  type DeclarationIssue,
  type DeclarationIssueCode,
  declarationValidationError,
  formatDeclarationIssue,
} from "./issues.js";
export { mergeTaskConfig } from "./merge.js";
export {
  type DeclarationFormat,
  type DeclarationSource,
  DeclarationSyntaxError,
  declarationFormatOf,
  MAX_NESTING,
  type ParsedDeclaration,
  parseDeclarationText,
} from "./parse.js";
export {
  decideWorkflowRetirement,
  type WorkflowRetirementDecision,
  type WorkflowRetirementState,
} from "./retire-workflow.js";
export {
  type DeclaredStandaloneTask,
  type DeclaredWorkflow,
  type DeclaredWorkflowTask,
  declarationDocumentSchema,
  declaredStandaloneTaskSchema,
  declaredWorkflowSchema,
  declaredWorkflowTaskSchema,
} from "./schema.js";
export {
  type DeclarationResult,
  type ExistingDeclarations,
  type TemplateCheck,
  type TemplateIssue,
  type ValidationOptions,
  validateDeclarations,
} from "./validate.js";
