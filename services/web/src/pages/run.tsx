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
import type { CriticalPath, RunView, Whoami } from "../schemas";
import { useLoad } from "../use-load";

/** The sets of a run's tasks shown, by their state in it. */
const SETS = ["success", "failed", "skipped", "upstream_failed", "cancelled"] as const;
type Sets = Record<(typeof SETS)[number], string[]>;

/** The run's tasks by their state in it: each task's instance's, else the run's record of it. */
export function runSets(v: RunView | undefined): Sets {
  const sets = Object.fromEntries(SETS.map((s) => [s, [] as string[]])) as Sets;
  // Each task's state in the run: its instance's, as the run's tries were folded, else the run's record.
  const states: Record<string, string> = { ...(v?.run.outcomes ?? {}) };
  for (const i of v?.instances ?? []) if (i.instance) states[i.task] = i.instance.status;
  for (const [task, s] of Object.entries(states)) sets[s as keyof Sets]?.push(task);
  return sets;
}

/** One run: its state and sets, its actions, its graph by instance state and a Gantt of its attempts. */
export function RunPage({ arg, q, who }: { arg: string; q: URLSearchParams; who: Whoami | null }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const path = { id: arg };
  const r = useLoad(() => get("/api/v1/runs/{id}", { path }, at), [arg, at, tick]);
  const cp = useLoad(() => get("/api/v1/runs/{id}/critical-path", { path }, at), [arg, at, tick]);
  const g = useLoad(() => get("/ui/graph", { query: { run: arg } }, at), [arg, at, tick]);
  const v = r.data?.value as RunView | undefined;
  const sets = runSets(v);
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
            <span class={`pill s-${v.run.status}`} data-testid="run-status">
              {v.run.status}
            </span>
            {` try ${v.run.try} (${v.run.trigger}${v.run.actor ? ` by ${v.run.actor}` : ""}), started ${time(v.run.startedAt)}, finished ${time(v.run.finishedAt)}`}
          </p>
          <div class="sets" data-testid="sets">
            {SETS.map((s) => (
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
                what={`This re-executes the tasks of ${arg} that did not succeed, and everything below them (${sets.failed.length} failed, ${sets.upstream_failed.length} upstream failed).`}
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
