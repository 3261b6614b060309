import { get } from "../api";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { time } from "../format";
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
          </tr>
        </thead>
        <tbody>
          {((r.data?.value ?? []) as Run[]).map((x) => (
            <tr data-run={x.runId}>
              <td>
                <a href={href("run", x.runId, { at })}>{x.runId}</a>
              </td>
              <td>
                <span class={`pill s-${x.status}`}>{x.status}</span>
              </td>
              <td>{x.try}</td>
              <td>{x.trigger}</td>
              <td>{time(x.startedAt)}</td>
              <td>{time(x.finishedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
