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
  return nearestWord(name, KNOWN);
}

/** The word of `words` that `name` most likely stands for (another case, or one or two edits away). */
export function nearestWord(name: string, words: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of words) {
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

/**
 * "Did you mean ...?" for a parent key declared nowhere: the known task keys it most likely
 * stands for. A key is a candidate when it is the same key in another case, the same task with
 * another partition, the same name in another project or account, or a few edits away (two for
 * a short key, one more per ten characters). The keys of the parent's own project come first,
 * then the nearest; at most three. Keys are grouped by project and by name when first asked, so
 * a catalogue of many tasks costs one pass, and only the projects spelt like the parent's are
 * scanned for edits, within a budget; each answer is kept, since one missing parent is often
 * named many times.
 */
export class TaskKeySuggester {
  private byProject: Map<string, string[]> | null = null;
  private byName: Map<string, string[]> | null = null;
  private readonly answers = new Map<string, readonly string[]>();
  /**
   * How many keys may still be compared letter by letter: a catalogue that names thousands of
   * parents declared nowhere, in a project of thousands of tasks, is not held up for its hints
   * (past this, only another case, partition, project or account of the same name is found).
   */
  private comparisons = 2_000_000;

  constructor(private readonly known: Iterable<string>) {}

  /** The known keys `label` (`project/account/name/partition`) may stand for, best first. */
  suggest(label: string): readonly string[] {
    const cached = this.answers.get(label);
    if (cached) return cached;
    const answer = this.compute(label);
    this.answers.set(label, answer);
    return answer;
  }

  private index(): { byProject: Map<string, string[]>; byName: Map<string, string[]> } {
    if (!this.byProject || !this.byName) {
      this.byProject = new Map();
      this.byName = new Map();
      for (const key of this.known) {
        const [project = "", , name = ""] = key.split("/");
        push(this.byProject, project.toLowerCase(), key);
        push(this.byName, name.toLowerCase(), key);
      }
    }
    return { byProject: this.byProject, byName: this.byName };
  }

  private compute(label: string): readonly string[] {
    const { byProject, byName } = this.index();
    const lower = label.toLowerCase();
    const [project = "", account = "", name = ""] = lower.split("/");
    const allowed = 2 + Math.floor(label.length / 10);
    const found = new Map<string, number>();
    const consider = (key: string, distance: number) => {
      const was = found.get(key);
      if (was === undefined || distance < was) found.set(key, distance);
    };
    for (const key of byName.get(name) ?? []) {
      const [p = "", a = ""] = key.toLowerCase().split("/");
      // The same task in another partition, or the same name in another project or account.
      consider(key, p === project && a === account ? 1 : editDistance(lower, key.toLowerCase(), 99));
    }
    for (const [p, keys] of byProject) {
      if (this.comparisons <= 0) break;
      if (p !== project && editDistance(project, p, 2) > 2) continue;
      this.comparisons -= keys.length;
      for (const key of keys) {
        const k = key.toLowerCase();
        if (Math.abs(k.length - lower.length) > allowed) continue;
        const d = editDistance(lower, k, allowed);
        if (d <= allowed) consider(key, d);
      }
    }
    found.delete(label);
    const ownProject = (key: string) => (key.split("/")[0]?.toLowerCase() === project ? 0 : 1);
    return [...found]
      .sort(([a, da], [b, db]) => ownProject(a) - ownProject(b) || da - db || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, 3)
      .map(([key]) => key);
  }
}

/** `a`, `a or b`, `a, b or c`. */
export function orList(items: readonly string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * Levenshtein distance (insertions, deletions, substitutions). With `limit`, a distance above
 * it is found early and answered as `limit + 1`.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    if (Math.min(...current) > limit) return limit + 1;
    previous = current;
  }
  return previous[b.length] as number;
}
