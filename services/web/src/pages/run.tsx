import { get, post } from "../api";
import { ActionButton } from "../components/action-button";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { Gantt } from "../components/gantt";
import { TriggerButton } from "../components/trigger-button";
import { label, time } from "../format";
import { GraphView } from "../graph";
import { useLiveTick } from "../live";
import { go, href } from "../router";
import type { CriticalPath, RunTaskState, RunView, Whoami } from "../schemas";
import { useLoad } from "../use-load";

/** Every state a task can have in a run, in the order the run's summary lists them. */
const STATES: readonly RunTaskState[] = [
  "success",
  "failed",
  "abandoned",
  "upstream_failed",
  "cancelled",
  "skipped",
  "running",
  "queued",
  "retry_wait",
  "pending",
];

/** The run's tasks by their state in it, as the run's summary (the API's, the CLI's) gives it. */
export function runSets(v: RunView | undefined): Record<RunTaskState, string[]> {
  const sets = Object.fromEntries(STATES.map((s) => [s, [] as string[]])) as Record<RunTaskState, string[]>;
  for (const [task, s] of Object.entries(v?.summary.tasks ?? {})) sets[s]?.push(task);
  return sets;
}

/** One run: its state and sets, why it waits, its actions, its graph by task state and a Gantt of its attempts. */
export function RunPage({ arg, q, who }: { arg: string; q: URLSearchParams; who: Whoami | null }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const path = { id: arg };
  const r = useLoad(() => get("/api/v1/runs/{id}", { path }, at), [arg, at, tick]);
  const cp = useLoad(() => get("/api/v1/runs/{id}/critical-path", { path }, at), [arg, at, tick]);
  const g = useLoad(() => get("/ui/graph", { query: { run: arg } }, at), [arg, at, tick]);
  const v = r.data?.value as RunView | undefined;
  const sets = runSets(v);
  // Every state with a task in it, and the ended ones always (a zero says as much).
  const shown = STATES.filter(
    (s) => sets[s].length > 0 || ["success", "failed", "upstream_failed", "skipped", "cancelled"].includes(s),
  );
  return (
    <section>
      <Banner at={at} asOf={r.data?.asOf} />
      <h1>
        Run <code>{arg}</code>
      </h1>
      <Err error={r.error} />
      {v && (
        <div class="card">
          <p>
            <span class={`pill s-${v.summary.state}`} data-testid="run-status">
              {v.summary.state}
            </span>
            {` try ${v.run.try} (${v.run.trigger}${v.run.actor ? ` by ${v.run.actor}` : ""}), started ${time(v.run.startedAt)}, finished ${time(v.run.finishedAt)}; ${v.summary.ended} of ${v.summary.total} tasks ended`}
          </p>
          {v.summary.waiting.length > 0 && (
            <div class="waiting" data-testid="waiting">
              <strong>Why it waits:</strong>
              <ul>
                {v.summary.waiting.map((w) => (
                  <li>{w}</li>
                ))}
              </ul>
            </div>
          )}
          <div class="sets" data-testid="sets">
            {shown.map((s) => (
              <div data-set={s}>
                <span class={`pill s-${s}`}>{label(s)}</span>
                {` ${sets[s].length} `}
                <small>{sets[s].join(", ")}</small>
              </div>
            ))}
          </div>
          {v.run.marked && Object.keys(v.run.marked).length > 0 && (
            <p data-testid="run-marked">
              {"Marked by hand: "}
              {Object.entries(v.run.marked).map(([task, outcome], i) => (
                <>
                  {i > 0 && ", "}
                  <a href={href("task", task, { at })}>{task}</a>
                  {` ${outcome === "success" ? "succeeded" : "skipped"}`}
                </>
              ))}
            </p>
          )}
          {!at &&
            (v.nextSteps ?? [])
              .filter((s) => s.action === "retry")
              .map((s) => (
                <p class="next-step" data-testid="run-next" data-task={s.task}>
                  <a href={href("task", s.task)}>{s.task}</a>
                  {" halted: retry it or mark it on its task page, or "}
                  <code>{s.command}</code>
                </p>
              ))}
          {!at && (
            <div class="actions">
              <ActionButton
                who={who}
                label="Rerun failed"
                title={`Rerun what failed in ${arg}`}
                what={`This re-executes the tasks of ${arg} that did not succeed, and everything below them (${sets.failed.length + sets.abandoned.length} failed, ${sets.upstream_failed.length} upstream failed, ${sets.cancelled.length} cancelled). Their attempts continue the interval's attempt numbers and share its retry budget.`}
                run={() => post("/api/v1/runs/{id}/rerun", { path, body: { failedOnly: true } })}
              />
              <TriggerButton who={who} workflow={v.run.workflow} />
            </div>
          )}
        </div>
      )}
      <h2>Graph</h2>
      {g.data && (
        <GraphView
          nodes={g.data.value.nodes}
          edges={g.data.value.edges}
          colour={(n) => n.state ?? n.condition}
          onOpen={(n) => go("task", n.id, { at })}
        />
      )}
      <h2>Gantt</h2>
      {v && <Gantt view={v} path={cp.data?.value as CriticalPath | undefined} />}
    </section>
  );
}
