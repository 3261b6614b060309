import { get, post } from "../api";
import { ActionButton } from "../components/action-button";
import { AttemptsTable } from "../components/attempts-table";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { Slider } from "../components/slider";
import { time } from "../format";
import { useLiveTick } from "../live";
import { href } from "../router";
import type { Attempt, TaskDetail, Whoami } from "../schemas";
import { useLoad } from "../use-load";

/** One task: where it stands and why, its actions, its attempts and its history. */
export function TaskPage({ arg, q, who }: { arg: string; q: URLSearchParams; who: Whoami | null }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const path = { key: arg };
  const t = useLoad(() => get("/api/v1/tasks/{key}", { path }, at), [arg, at, tick]);
  const a = useLoad(() => get("/api/v1/tasks/{key}/attempts", { path }, at), [arg, at, tick]);
  const hist = useLoad(() => get("/api/v1/tasks/{key}/history", { path }, at), [arg, at, tick]);
  const head = useLoad(() => get("/api/v1/log/head"), [tick]);
  const d = t.data?.value as TaskDetail | undefined;
  const events = hist.data?.value ?? [];
  const headPos = Number(head.data?.value.position ?? 0);
  return (
    <section>
      <Banner at={at} asOf={t.data?.asOf} />
      <h1>
        Task <code>{arg}</code>
      </h1>
      <Err error={t.error} />
      {d && <Where arg={arg} detail={d} at={at} who={who} />}
      <h2>Attempts</h2>
      <AttemptsTable task={arg} attempts={(a.data?.value ?? []) as Attempt[]} at={at} who={who} />
      <h2>History</h2>
      {head.data && <Slider at={at} max={headPos} page="task" arg={arg} />}
      <ol class="timeline" data-testid="history">
        {events.map((e) => (
          <li data-position={e.position} data-type={e.type}>
            <span class="pos">
              <a href={href("task", arg, { at: e.position })}>#{e.position}</a>
            </span>
            <span class="when">{time(e.metadata.recordedAt)}</span>
            <strong>{e.type}</strong>
            <span class="actor" data-testid="actor">
              {e.metadata.actor ?? "—"}
            </span>
            <span class="stream">{e.streamId}</span>
            {e.metadata.causationId && <span class="cause">caused by {e.metadata.causationId}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}

/** Where the task stands, why, and (live, to a token that may act) what can be done to it. */
function Where({
  arg,
  detail: d,
  at,
  who,
}: {
  arg: string;
  detail: TaskDetail;
  at: string | null;
  who: Whoami | null;
}) {
  const task = d.task;
  const path = { key: arg };
  return (
    <div class="card" data-testid="where">
      <p>
        <span class={`pill s-${d.condition}`} data-testid="condition">
          {d.condition}
        </span>
        {" status "}
        <strong data-testid="status">{task.status}</strong>
        {", interval "}
        <code>{time(task.logicalDate)}</code>
        {`, due ${time(task.nextRunDate)}`}
        {task.spec.workflow && (
          <>
            {" · workflow "}
            <a href={href("graph", "", { workflow: task.spec.workflow, at })}>{task.spec.workflow}</a>
          </>
        )}
      </p>
      <ul data-testid="reasons">
        {d.reasons.map((r) => (
          <li>{r}</li>
        ))}
      </ul>
      {!at && (
        <div class="actions">
          {task.status === "paused" ? (
            <ActionButton
              who={who}
              label="Resume"
              title={`Resume ${arg}`}
              what={`This resumes ${arg}: the scheduler runs its intervals again, from ${task.logicalDate}.`}
              run={() => post("/api/v1/tasks/{key}/resume", { path })}
            />
          ) : (
            <ActionButton
              who={who}
              label="Pause"
              title={`Pause ${arg}`}
              what={`This pauses ${arg}: no new attempt of it starts until it is resumed (one running now finishes). The event carries your token's actor, ${who?.actor}.`}
              fields={[{ name: "reason", label: "Reason (optional)" }]}
              run={(v) =>
                post("/api/v1/tasks/{key}/pause", { path, body: v.reason ? { reason: v.reason } : {} })
              }
            />
          )}
          <ActionButton
            who={who}
            label="Backfill"
            title={`Backfill ${arg}`}
            what={`This re-runs every interval of ${arg} from FROM to TO (logical dates), and its subtree if you say so.`}
            fields={[
              { name: "from", label: "From", value: task.prevIntervalStart ?? task.logicalDate },
              { name: "to", label: "To", value: task.logicalDate },
              { name: "downstream", label: "Downstream too (yes/no)", value: "no" },
            ]}
            run={(v) =>
              post("/api/v1/backfills", {
                body: {
                  task: arg,
                  from: v.from ?? "",
                  to: v.to ?? "",
                  downstream: /^y/i.test(v.downstream ?? ""),
                },
              })
            }
          />
        </div>
      )}
    </div>
  );
}
