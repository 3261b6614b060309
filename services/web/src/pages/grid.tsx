import { get } from "../api";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { StateSelect } from "../components/state-select";
import { label } from "../format";
import { useLiveTick } from "../live";
import { go, href } from "../router";
import type { GridCellState } from "../schemas";
import { useLoad } from "../use-load";

/**
 * The state filter's options, in this order. A record of every state the grid endpoint's enum
 * has: the type check fails when the endpoint gains a state this does not offer.
 */
const OFFERED: Record<GridCellState, true> = {
  success: true,
  failed: true,
  upstream_failed: true,
  skipped: true,
  running: true,
  queued: true,
  retry_wait: true,
  blocked: true,
  not_due: true,
  waiting: true,
  paused: true,
  held: true,
  ended: true,
  retired: true,
  cancelled: true,
  abandoned: true,
};
export const GRID_STATES = Object.keys(OFFERED) as GridCellState[];

/** Tasks by their recent logical dates, filtered by project, workflow and state, a page at a time. */
export function GridPage({ q }: { q: URLSearchParams }) {
  const at = q.get("at");
  const project = q.get("project") ?? "";
  const workflow = q.get("workflow") ?? "";
  const state = q.get("state") ?? "";
  const page = Number(q.get("page") ?? 0);
  const tick = useLiveTick(!at);
  const set = (k: string, v: string | number) =>
    go("grid", "", { at, project, workflow, state, page: k === "page" ? v : 0, [k]: v });
  const r = useLoad(
    () =>
      get("/ui/grid", { query: { project, workflow, state, page: String(page), limit: String(100) } }, at),
    [at, project, workflow, state, page, tick],
  );
  const g = r.data?.value;
  const dates = gridDates(g?.rows ?? []);
  return (
    <section>
      <Banner at={at} asOf={r.data?.asOf} />
      <h1>Tasks</h1>
      <div class="filters">
        <StateSelect
          label="Project"
          name="project"
          value={project}
          options={g?.projects ?? []}
          onChange={(v) => set("project", v)}
        />
        <StateSelect
          label="Workflow"
          name="workflow"
          value={workflow}
          options={g?.workflows ?? []}
          onChange={(v) => set("workflow", v)}
        />
        <StateSelect
          label="State"
          name="state"
          value={state}
          options={GRID_STATES}
          onChange={(v) => set("state", v)}
        />
        <span class="pager">
          <button type="button" disabled={page <= 0} onClick={() => set("page", page - 1)}>
            ‹ Prev
          </button>
          <span data-testid="page">
            page {page + 1} of {g?.pages ?? 1} ({g?.total ?? 0} tasks)
          </span>
          <button type="button" disabled={!g || page + 1 >= g.pages} onClick={() => set("page", page + 1)}>
            Next ›
          </button>
        </span>
      </div>
      <Err error={r.error} />
      <table class="grid" data-testid="grid">
        <thead>
          <tr>
            <th>task</th>
            <th>now</th>
            {dates.length === 0 ? (
              <th>recent logical dates, newest first</th>
            ) : (
              dates.map((d) => (
                <th class="date" data-date={d} title={d}>
                  {d.slice(5, 10)}
                  <br />
                  {d.slice(11, 16)}
                </th>
              ))
            )}
          </tr>
        </thead>
        <tbody>
          {(g?.rows ?? []).map((row) => (
            <tr data-task={row.task}>
              <td>
                <a href={href("task", row.task, { at })}>{row.task}</a>
              </td>
              <td class="cond" title={row.reasons.join("\n")}>
                {row.condition}
              </td>
              {dates.map((d) => {
                const c = row.cells.find((x) => x.logicalDate === d);
                const older =
                  row.cells.length > 0 && row.cells.every((x) => Date.parse(d) < Date.parse(x.logicalDate));
                return c ? (
                  <td
                    class={`cell s-${c.state}`}
                    data-state={c.state}
                    data-date={c.logicalDate}
                    title={`${c.logicalDate}: ${label(c.state)}`}
                  >
                    {label(c.state)}
                    <small>{c.logicalDate.slice(5, 16).replace("T", " ")}</small>
                  </td>
                ) : (
                  <td
                    class={`gap${older ? " older" : ""}`}
                    data-date={d}
                    title={
                      older
                        ? `${d}: older than the ${row.cells.length} recent dates shown for ${row.task}`
                        : `${d}: ${row.task} has no interval at this date`
                    }
                  >
                    {older ? "…" : ""}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** Columns the grid shows at most: the newest dates of its rows. */
const MAX_COLUMNS = 24;

/**
 * The grid's columns: every logical date of the rows shown, newest first, so each column is one
 * date down every row (an hourly and a daily task side by side: each has cells in its own dates'
 * columns, and a gap in the others').
 */
export function gridDates(rows: ReadonlyArray<{ cells: ReadonlyArray<{ logicalDate: string }> }>): string[] {
  const all = new Set<string>();
  for (const r of rows) for (const c of r.cells) all.add(c.logicalDate);
  return [...all].sort((a, b) => Date.parse(b) - Date.parse(a)).slice(0, MAX_COLUMNS);
}
