import { compiled } from "../compiled.js";
import { noteParsedSpec } from "../events/catalog.js";
import { firstSlotAtOrAfter, nextCronTime } from "../schedule/cron.js";
import { type Secrets, type TaskSpec, type TaskSpecInput, taskSpecSchema } from "../spec.js";
import { checkLiteralCredentials } from "./credentials.js";
import type { IssueCollector, Located } from "./issues.js";
import { mergeTaskConfig } from "./merge.js";
import type { Names } from "./names.js";
import { type ParentRef, resolveParents } from "./parents.js";
import { checkSchedule, cronProblem, isTimeZone, toInstant } from "./schedule-check.js";
import type { DeclaredWorkflow, DeclaredWorkflowTask } from "./schema.js";
import { checkOperator, parseSinks, type TaskDraft } from "./shape.js";

/**
 * The third room: one well-shaped task, resolved into its spec. A workflow task inherits cron,
 * timezone, startDate, endDate, catchup, connection, retry (field by field), idempotent,
 * leaseSeconds, priority, priorityRule, deadline, project and account from its workflow; config
 * is deep-merged workflow -> task -> inline (`operator.config`); dates become UTC instants with
 * milliseconds; parents become full keys. Every problem of the task is reported, each where it is written.
 */
export interface ResolvedTask {
  readonly draft: TaskDraft;
  /**
   * The spec, whenever its schedule and operator are sound, even with other problems (an
   * unknown connection, a wrong parent): enough to check its templates in the same round.
   */
  readonly spec: TaskSpec | undefined;
  /** Its parents that could be read: its edges in the graph. */
  readonly parents: ParentRef[];
}

/**
 * A field's value and where it was written (`file`, `path.field`), made only when a problem is
 * reported there: a catalogue of many tasks reports none, and each field picked made it.
 */
class Picked<V> {
  constructor(
    readonly value: V,
    private readonly from: { readonly file: string; readonly path: string },
    private readonly field: string,
  ) {}

  get at(): Located {
    return { file: this.from.file, path: `${this.from.path}.${this.field}` };
  }
}

export function resolveTask(d: TaskDraft, names: Names, issues: IssueCollector): ResolvedTask {
  const errorsBefore = issues.errorCount;
  const { decl, workflow: wf, label } = d;
  const at = (field: string): Located => ({ file: d.file, path: `${d.path}.${field}` });
  /** The task's own value, else its workflow's, with where it was written. */
  function pick<K extends keyof DeclaredWorkflow & keyof DeclaredWorkflowTask>(field: K) {
    if (decl[field] !== undefined) return new Picked(decl[field], d, field);
    if (wf && wf.decl[field] !== undefined) return new Picked(wf.decl[field], wf, field);
    return undefined;
  }

  checkSchedule(decl, d, label, issues);

  const cron = pick("cron");
  if (!cron) {
    const hint = wf ? ": set it on the task or on its workflow" : "";
    issues.error("required", at("cron"), `cron is required${hint}`, label);
  }
  const timezone = pick("timezone");
  const startDate = pick("startDate");
  if (!startDate) {
    const hint = wf ? ": set it on the task or on its workflow" : "";
    issues.error("required", at("startDate"), `startDate is required${hint}`, label);
  }
  const endDate = pick("endDate");
  const start = startDate ? toInstant(startDate.value) : undefined;
  const end = endDate ? toInstant(endDate.value) : undefined;
  if (endDate && start && end && end <= start) {
    issues.error("date", endDate.at, `endDate ${end} is not after startDate ${start}`, label);
  }

  const { operator, inline } = checkOperator(decl.operator, d, label, issues);

  // An outside task is never run: a connection or queue of its own would promise slots and
  // workers it never takes, so it is an error.
  const external = operator?.type === "external";
  // A run is what Chronolog runs: an outside task stands on its own, and a workflow's tasks
  // name it as a parent.
  if (external && wf)
    issues.error(
      "operator",
      at("operator"),
      "an external task is declared on its own (under tasks:), not in a workflow: Chronolog never runs it, and the workflow's tasks name it as a parent",
      label,
    );
  if (external)
    for (const field of ["connection", "queue"] as const)
      if (decl[field] !== undefined)
        issues.error(
          "operator",
          at(field),
          `an external task is never run by Chronolog: it takes no ${field} (its intervals are reported with chronolog report)`,
          label,
        );
  // Connection: known, and allowing this operator.
  const connection = external ? undefined : pick("connection");
  if (connection) {
    const known = names.connections.get(connection.value);
    if (!known) {
      issues.error(
        "connection_unknown",
        connection.at,
        `connection "${connection.value}" is not declared (neither in these files nor already)`,
        label,
      );
    } else if (operator && known.operators.length > 0 && !known.operators.includes(operator.type)) {
      issues.error(
        "connection_operator",
        connection.at,
        `connection "${connection.value}" allows operators ${known.operators.join(", ")}; ` +
          `this task's operator is ${operator.type}`,
        label,
      );
    }
  }

  // Secrets: the connection's, then the workflow's, then the task's own (a name given again
  // takes the nearer source).
  const connectionSecrets = connection ? names.connections.get(connection.value)?.secrets : undefined;
  const secrets: Secrets = {
    ...(connectionSecrets ?? {}),
    ...(wf?.decl.secrets ?? {}),
    ...(decl.secrets ?? {}),
  };
  if (operator) checkLiteralCredentials(operator, at("operator"), label, issues);

  const queue = external ? undefined : pick("queue");
  // A python task runs only on a Python worker serving its queue: without one, it never runs.
  if (operator?.type === "python" && !queue)
    issues.warning(
      "operator",
      at("operator"),
      "a python task runs on a Python worker serving its queue: give it one (queue: NAME), or the scheduler's own workers refuse each attempt",
      label,
    );
  // Left out when they say the default, so that a declaration without them reads the same.
  const priority = pick("priority")?.value;
  const priorityRule = pick("priorityRule")?.value;
  const deadline = pick("deadline");
  const parents = resolveParents(d, issues);
  const alerts = [...(wf?.spec.alerts ?? []), ...parseSinks(decl.alerts, d, label, issues)];
  const clean = issues.errorCount === errorsBefore;

  // A schedule that cannot be read (reported here, or at the workflow) gives no spec to check.
  const sound =
    cron && start && operator && !cronProblem(cron.value) && (!timezone || isTimeZone(timezone.value));
  if (!sound) return { draft: d, spec: undefined, parents };

  // The optional fields last: adding properties after spreading a non-empty object is the
  // engine's slow path. The schema gives the spec its fields in its own order.
  const input: TaskSpecInput = {
    key: d.key,
    cron: cron.value.trim(),
    timezone: timezone?.value ?? "UTC",
    startDate: start,
    catchup: pick("catchup")?.value,
    operator,
    parents: parents.map((p) => p.key),
    retry: { ...(wf?.decl.retry ?? {}), ...(decl.retry ?? {}) } as TaskSpecInput["retry"],
    idempotent: pick("idempotent")?.value,
    config: mergeTaskConfig(wf?.decl.config, decl.config, inline),
    leaseSeconds: pick("leaseSeconds")?.value,
    alerts,
    ...(wf ? { workflow: wf.spec.name } : {}),
    ...(end ? { endDate: end } : {}),
    ...(connection ? { connection: connection.value } : {}),
    ...(queue ? { queue: queue.value } : {}),
    ...(deadline ? { deadline: deadline.value } : {}),
    ...(decl.cacheKey !== undefined ? { cacheKey: decl.cacheKey } : {}),
    ...(Object.keys(secrets).length > 0 && !external ? { secrets } : {}),
    ...(priority ? { priority } : {}),
    ...(priorityRule === "downstream" ? { priorityRule } : {}),
  };
  const spec = compiled(taskSpecSchema).safeParse(input);
  if (!spec.success) {
    // Said only when nothing else was: otherwise it repeats what was.
    if (clean) issues.schema(d, spec.error.issues, label);
    return { draft: d, spec: undefined, parents };
  }
  // Dates that leave the schedule no interval it can run.
  const first = firstInterval(spec.data);
  if (first.endsAfter9999 && startDate) {
    issues.error(
      "date",
      startDate.at,
      first.start
        ? `startDate ${start}: its first interval, from ${first.start}, ends after the year 9999, past the last date the log can hold`
        : `startDate ${start}: its first slot is after the year 9999, past the last date the log can hold`,
      label,
    );
    return { draft: d, spec: undefined, parents };
  }
  if (end && end > start && first.start && Date.parse(first.start) > Date.parse(end))
    issues.warning(
      "date",
      endDate?.at ?? at("endDate"),
      `endDate ${end} is before the schedule's first interval, ${first.start} (its first slot at or after startDate): the task never runs`,
      label,
    );
  // The event that declares the task takes the spec as is, not parsed again (see validateEventData).
  noteParsedSpec(spec.data);
  return { draft: d, spec: spec.data, parents };
}

/** The last instant the log's dates can name (an ISO 8601 instant has four digits of year). */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * A schedule's first interval: its start (the first slot at or after startDate; undefined past the
 * year 9999), and whether it ends past the year 9999.
 */
function firstInterval(spec: TaskSpec): { start: string | undefined; endsAfter9999: boolean } {
  const first = firstSlotAtOrAfter(spec.cron, spec.timezone, new Date(spec.startDate));
  if (first.getTime() > LAST_INSTANT) return { start: undefined, endsAfter9999: true };
  const ends = nextCronTime(spec.cron, spec.timezone, first);
  return { start: first.toISOString(), endsAfter9999: ends.getTime() > LAST_INSTANT };
}
