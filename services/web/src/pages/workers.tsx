import { get } from "../api";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { time } from "../format";
import { useLiveTick } from "../live";
import { href } from "../router";
import type { Worker } from "../schemas";
import { useLoad } from "../use-load";

/** What a worker runs: a link to each attempt's task and interval, and a count of those hidden. */
function Running({ w, at }: { w: Worker; at: string | null }) {
  if (w.running.length === 0 && w.hidden === 0) return <span class="muted">—</span>;
  return (
    <ul class="plain">
      {w.running.map((a) => (
        <li data-task={a.task}>
          <a href={href("task", a.task, { at })}>{a.task}</a> <code>{time(a.logicalDate)}</code>
          {` #${a.attempt}`}
          {a.startedAt && <small>{` since ${time(a.startedAt)}`}</small>}
        </li>
      ))}
      {w.hidden > 0 && (
        <li class="muted" data-testid="hidden">
          {`${w.hidden} of other projects`}
        </li>
      )}
    </ul>
  );
}

/** Remote workers: those connected, their load and what each runs; those gone recently, and why. */
export function WorkersPage({ q }: { q: URLSearchParams }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const r = useLoad(() => get("/api/v1/workers", { query: { all: "true" } }, at), [at, tick]);
  const connected = r.data?.value.connected ?? [];
  const gone = r.data?.value.disconnected ?? [];
  return (
    <section>
      <Banner at={at} asOf={r.data?.asOf} />
      <h1>Workers</h1>
      <Err error={r.error} />
      <p class="muted">
        Workers on other hosts, started with <code>chronolog worker --connect URL --queue NAME</code>: a task
        with a queue runs only on them. Tasks with none run in the scheduler's own workers.
      </p>
      {r.data && connected.length === 0 && <p data-testid="no-workers">No workers are connected.</p>}
      {connected.length > 0 && (
        <table class="list" data-testid="workers">
          <thead>
            <tr>
              <th>worker</th>
              <th>host</th>
              <th>queues</th>
              <th>load</th>
              <th>version</th>
              <th>connected since</th>
              <th>last heard</th>
              <th>running</th>
            </tr>
          </thead>
          <tbody>
            {connected.map((w) => (
              <tr data-worker={w.id}>
                <td>
                  <strong>{w.id}</strong>
                  {w.token && <small>{` token ${w.token}`}</small>}
                </td>
                <td>{w.host}</td>
                <td>{w.queues.join(", ")}</td>
                <td data-testid="load">{`${w.busy}/${w.capacity}`}</td>
                <td>{w.version}</td>
                <td>{time(w.since)}</td>
                <td data-testid="heard">{time(w.lastHeard)}</td>
                <td data-testid="running">
                  <Running w={w} at={at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {gone.length > 0 && (
        <>
          <h2>Gone recently</h2>
          <table class="list" data-testid="gone">
            <thead>
              <tr>
                <th>worker</th>
                <th>host</th>
                <th>queues</th>
                <th>connected</th>
                <th>disconnected</th>
                <th>why</th>
              </tr>
            </thead>
            <tbody>
              {gone.map((w) => (
                <tr data-worker={w.id}>
                  <td>{w.id}</td>
                  <td>{w.host}</td>
                  <td>{w.queues.join(", ")}</td>
                  <td>{time(w.since)}</td>
                  <td>{time(w.until)}</td>
                  <td data-testid="reason">{w.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
