import { connectionSpecSchema, operatorSchema, retryPolicySchema } from "../spec.js";
import {
  declarationDocumentSchema,
  declaredStandaloneTaskSchema,
  declaredWorkflowSchema,
  declaredWorkflowTaskSchema,
} from "./schema.js";

/**
 * "Did you mean ...?" for an unknown field of a declaration: the known field names of every
 * object a declaration has (the file, connections, workflows, tasks, operators, retry), and the
 * nearest of them to a misspelt one.
 */
const KNOWN: readonly string[] = [
  ...new Set([
    ...Object.keys(declarationDocumentSchema.shape),
    ...Object.keys(connectionSpecSchema.shape),
    ...Object.keys(declaredWorkflowSchema.shape),
    ...Object.keys(declaredWorkflowTaskSchema.shape),
    ...Object.keys(declaredStandaloneTaskSchema.shape),
    ...Object.keys(retryPolicySchema.shape),
    ...operatorSchema.options.flatMap((o) => Object.keys(o.shape)),
  ]),
];

/** The known field `name` most likely stands for (same letters in another case, or one or two edits away). */
export function suggestField(name: string): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of KNOWN) {
    if (known === name) return undefined;
    const d = known.toLowerCase() === lower ? 0 : editDistance(lower, known.toLowerCase());
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  const allowed = name.length <= 4 ? 1 : 2;
  return bestDistance <= allowed ? best : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}
