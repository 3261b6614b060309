import { get } from "../api";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { label, time } from "../format";
import { useLiveTick } from "../live";
import { href } from "../router";
import type { Run } from "../schemas";
import { useLoad } from "../use-load";

/** Every workflow run, newest logical date first. */
export function RunsPage({ q }: { q: URLSearchParams }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const r = useLoad(() => get("/api/v1/runs", {}, at), [at, tick]);
  return (
    <section>
      <Banner at={at} asOf={r.data?.asOf} />
      <h1>Runs</h1>
      <Err error={r.error} />
      <table class="list" data-testid="runs">
        <thead>
          <tr>
            <th>run</th>
            <th>status</th>
            <th>try</th>
            <th>trigger</th>
            <th>started</th>
            <th>finished</th>
            <th>tasks</th>
            <th>why it waits</th>
          </tr>
        </thead>
        <tbody>
          {((r.data?.value ?? []) as Run[]).map((x) => (
            <tr data-run={x.runId}>
              <td>
                <a href={href("run", x.runId, { at })}>{x.runId}</a>
              </td>
              <td>
                <span class={`pill s-${x.summary.state}`}>{x.summary.state}</span>
              </td>
              <td>{x.try}</td>
              <td>{x.trigger}</td>
              <td>{time(x.startedAt)}</td>
              <td>{time(x.finishedAt)}</td>
              <td data-testid="run-counts">
                {`${x.summary.ended} of ${x.summary.total} ended`}
                <small>
                  {" "}
                  {Object.entries(x.summary.counts)
                    .filter(([, n]) => n > 0)
                    .map(([s, n]) => `${label(s)} ${n}`)
                    .join(", ")}
                </small>
              </td>
              <td class="waiting" data-testid="run-waiting">
                {x.summary.waiting.join("; ")}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
