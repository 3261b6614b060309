import { get } from "../api";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { StateSelect } from "../components/state-select";
import { TriggerButton } from "../components/trigger-button";
import { GraphView } from "../graph";
import { useLiveTick } from "../live";
import { go } from "../router";
import type { Whoami } from "../schemas";
import { useLoad } from "../use-load";

/** Every declaration (of a project, or a workflow) as a graph, coloured by where each task stands. */
export function GraphPage({ q, who }: { q: URLSearchParams; who: Whoami | null }) {
  const at = q.get("at");
  const project = q.get("project") ?? "";
  const workflow = q.get("workflow") ?? "";
  const tick = useLiveTick(!at);
  const r = useLoad(
    () => get("/ui/graph", { query: { project, workflow } }, at),
    [at, project, workflow, tick],
  );
  const meta = useLoad(() => get("/ui/grid", { query: { limit: "1" } }, at), [at]);
  const g = r.data?.value;
  const wf = workflow;
  return (
    <section>
      <Banner at={at} asOf={r.data?.asOf} />
      <h1>Graph</h1>
      <div class="filters">
        <StateSelect
          label="Project"
          name="project"
          value={project}
          options={meta.data?.value.projects ?? []}
          onChange={(v) => go("graph", "", { at, project: v })}
        />
        <StateSelect
          label="Workflow"
          name="workflow"
          value={workflow}
          options={meta.data?.value.workflows ?? []}
          onChange={(v) => go("graph", "", { at, workflow: v })}
        />
        {wf && !at && <TriggerButton who={who} workflow={wf} />}
        <span>{g ? `${g.nodes.length} nodes, ${g.edges.length} edges` : "loading…"}</span>
      </div>
      <Err error={r.error} />
      {g && (
        <GraphView
          nodes={g.nodes}
          edges={g.edges}
          colour={(n) => n.condition}
          onOpen={(n) => go("task", n.id, { at })}
        />
      )}
    </section>
  );
}
