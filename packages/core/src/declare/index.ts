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
export { mergeTaskConfig } from "./merge.js";
export {
  type DeclarationFormat,
  type DeclarationSource,
  DeclarationSyntaxError,
  declarationFormatOf,
  type ParsedDeclaration,
  parseDeclarationText,
} from "./parse.js";
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
  type DeclarationIssue,
  type DeclarationIssueCode,
  type DeclarationResult,
  declarationValidationError,
  type ExistingDeclarations,
  formatDeclarationIssue,
  validateDeclarations,
} from "./validate.js";
