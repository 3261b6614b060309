import { get, post } from "../api";
import { ActionButton } from "../components/action-button";
import { AttemptsTable } from "../components/attempts-table";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { Slider } from "../components/slider";
import { time } from "../format";
import { useLiveTick } from "../live";
import { href } from "../router";
import type { Attempt, NextStep, RecordedEvent, TaskDetail, Whoami } from "../schemas";
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
            {byHand(e) && (
              <span class="by-hand" data-testid="by-hand">
                {byHand(e)}
              </span>
            )}
            <span class="stream">{e.streamId}</span>
            {e.metadata.causationId && <span class="cause">caused by {e.metadata.causationId}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}

/** What an operator did by hand to an interval, in words (a mark or a retry), for the history. */
function byHand(e: RecordedEvent): string | null {
  const d = e.data as { outcome?: string; reason?: string; by?: string; logicalDate?: string };
  if (e.type === "IntervalMarked")
    return `${time(d.logicalDate ?? null)} marked ${d.outcome === "success" ? "succeeded" : "skipped"} by ${d.by}: ${d.reason}`;
  if (e.type === "IntervalReported")
    return `${time(d.logicalDate ?? null)} reported ${d.outcome} by ${d.by}${d.reason ? `: ${d.reason}` : ""}`;
  if (e.type === "IntervalRetried")
    return `${time(d.logicalDate ?? null)} retried by ${d.by}${d.reason ? `: ${d.reason}` : ""}`;
  return null;
}

const STEP_LABELS: Record<NextStep["action"], string> = {
  retry: "Retry",
  mark_succeeded: "Mark succeeded",
  mark_skipped: "Mark skipped",
  abandon: "Abandon",
  resume: "Resume",
  report_succeeded: "Report succeeded",
  report_failed: "Report failed",
};

/**
 * The ways out of where the task stands, as `why` names them: a button for each (to a token that
 * may act), and the CLI command that does the same.
 */
function WaysOut({ arg, detail: d, who }: { arg: string; detail: TaskDetail; who: Whoami | null }) {
  const inst = d.instance as { attempts?: Array<{ token: string; attempt: number; status: string }> } | null;
  const current = inst?.attempts?.at(-1);
  const steps = d.nextSteps.filter((s) => s.action !== "abandon" && s.action !== "resume");
  const running =
    current &&
    (current.status === "running" || current.status === "queued" || current.status === "lease_expired");
  if (steps.length === 0 && !running) return null;
  return (
    <div class="ways-out" data-testid="ways-out">
      {steps.map((s) => {
        const other = s.task !== arg ? ` ${s.task}` : "";
        const label = `${STEP_LABELS[s.action]}${other}`;
        const interval = s.interval ?? "";
        const path = { key: s.task };
        const mark = s.action === "mark_succeeded" || s.action === "mark_skipped";
        if (s.action === "report_succeeded" || s.action === "report_failed")
          return <ReportWay step={s} label={label} who={who} />;
        return (
          <div class="way" data-step={s.action} data-task={s.task} data-interval={interval}>
            <ActionButton
              who={who}
              label={label}
              title={`${label} ${time(interval)}`}
              what={
                mark
                  ? `This marks ${s.task} ${interval} ${s.action === "mark_succeeded" ? "succeeded" : "skipped"} by hand: it counts as done for its children, who then go on, and shows as marked, with your reason and your token's actor (${who?.actor}).`
                  : `This runs ${s.task} ${interval} again: a new attempt, with a fresh retry budget; its descendants closed as upstream_failed for it wait for it again. Nothing else is reset.`
              }
              fields={[{ name: "reason", label: mark ? "Reason (required)" : "Reason (optional)" }]}
              ok={label}
              run={(v) =>
                mark
                  ? post("/api/v1/tasks/{key}/mark", {
                      path,
                      body: {
                        interval,
                        outcome: s.action === "mark_succeeded" ? "success" : "skipped",
                        reason: v.reason ?? "",
                      },
                    })
                  : post("/api/v1/tasks/{key}/retry", {
                      path,
                      body: { interval, ...(v.reason ? { reason: v.reason } : {}) },
                    })
              }
            />
            <code class="cli">{s.command}</code>
          </div>
        );
      })}
      {running && current && (
        <div class="way" data-step="abandon" data-task={arg}>
          <ActionButton
            who={who}
            label="Abandon"
            title={`Abandon attempt ${current.attempt} of ${arg}`}
            what={`This abandons attempt ${current.attempt} (token ${current.token.slice(0, 12)}…): its worker's report will not count. Retry: type yes to start a new attempt after it.`}
            fields={[
              { name: "retry", label: "Retry (yes/no)", value: "no" },
              { name: "reason", label: "Reason (optional)" },
            ]}
            run={(v) =>
              post("/api/v1/attempts/{token}/abandon", {
                path: { token: current.token },
                body: { retry: /^y/i.test(v.retry ?? ""), ...(v.reason ? { reason: v.reason } : {}) },
              })
            }
          />
          <code class="cli">{`chronolog attempt abandon ${arg} --interval ${d.task.logicalDate}`}</code>
        </div>
      )}
    </div>
  );
}

/** The Report button of an outside task's interval, beside the CLI command that does the same. */
function ReportWay({ step: s, label, who }: { step: NextStep; label: string; who: Whoami | null }) {
  const interval = s.interval ?? "";
  const failed = s.action === "report_failed";
  return (
    <div class="way" data-step={s.action} data-task={s.task} data-interval={interval}>
      <ActionButton
        who={who}
        label={label}
        title={`${label} ${time(interval)}`}
        what={
          failed
            ? `This reports ${s.task} ${interval} failed, as its producer would: the task stops at it, and its children wait, until it is reported succeeded. It is recorded with your reason and your token's actor (${who?.actor}).`
            : `This reports ${s.task} ${interval} succeeded, as its producer would: it counts as done for its children once every earlier interval is in. It is recorded with your token's actor (${who?.actor}).`
        }
        fields={[{ name: "reason", label: failed ? "Reason (required)" : "Note (optional)" }]}
        ok={label}
        run={(v) =>
          post("/api/v1/tasks/{key}/intervals/{date}", {
            path: { key: s.task, date: interval },
            body: {
              outcome: failed ? "failed" : "succeeded",
              ...(v.reason ? { reason: v.reason } : {}),
            },
          })
        }
      />
      <code class="cli">{s.command}</code>
    </div>
  );
}

/** The deadline of the task's current interval: when it is due, the estimate, what holds it. */
function Deadline({ deadline: dl }: { deadline: NonNullable<TaskDetail["deadline"]> }) {
  const label = dl.deadline.at ?? dl.deadline.within ?? "";
  const words = { on_track: "on track", at_risk: "at risk", missed: "missed" }[dl.state];
  return (
    <div class="deadline" data-testid="deadline" data-state={dl.state}>
      <p>
        {"Deadline "}
        <strong>{label}</strong>
        {` for ${time(dl.logicalDate)}: due ${time(dl.dueAt)}, `}
        <span class={`pill d-${dl.state}`} data-testid="deadline-state">
          {words}
        </span>
        {dl.estimate.doneAt
          ? ` · estimated done ${time(dl.estimate.doneAt)}`
          : " · cannot be done without an operator"}
      </p>
      {dl.estimate.path.length > 0 && (
        <p data-testid="deadline-path">
          {"Longest path left: "}
          {dl.estimate.path.map((s) => `${s.task} ${Math.round(s.ms / 1000)}s`).join(" → ")}
        </p>
      )}
      {dl.cause && <p data-testid="deadline-cause">{dl.cause.text}</p>}
      {dl.metLate && (
        <p data-testid="deadline-met-late">{`${time(dl.metLate.logicalDate)} met its ${dl.metLate.text}`}</p>
      )}
    </div>
  );
}

/** An outside task's latest reported intervals, and who reported them. */
function Reports({ detail: d }: { detail: TaskDetail }) {
  if (d.reports.length === 0) return null;
  return (
    <ul class="reports" data-testid="reports">
      {d.reports.map((r) => (
        <li data-interval={r.logicalDate} data-outcome={r.outcome} data-standing={r.standing}>
          <code>{time(r.logicalDate)}</code>
          {` reported ${r.outcome} by `}
          <span class="actor">{r.by}</span>
          {` at ${time(r.at)}${r.reason ? `: ${r.reason}` : ""}`}
          {r.standing === "held" && " (held: an earlier interval is not in)"}
        </li>
      ))}
    </ul>
  );
}

/** Its priority: `5`, `5 (downstream: weight 12)`, and how a backfill's interval competes. */
function priorityText(p: TaskDetail["priority"]): string {
  const own = p.rule === "downstream" ? `${p.priority} (downstream: weight ${p.weight})` : `${p.priority}`;
  return p.claim.backfill ? `${own}; this backfill's interval waits after every scheduled one` : own;
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
        {" · priority "}
        <strong data-testid="priority">{priorityText(d.priority)}</strong>
        {task.spec.queue && (
          <>
            {" · queue "}
            <a href={href("workers", "", { at })} data-testid="queue">
              {task.spec.queue}
            </a>
          </>
        )}
      </p>
      <ul data-testid="reasons">
        {d.reasons.map((r) => (
          <li>{r}</li>
        ))}
      </ul>
      <Reports detail={d} />
      {d.deadline && <Deadline deadline={d.deadline} />}
      {!at && <WaysOut arg={arg} detail={d} who={who} />}
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
              { name: "priority", label: "Priority (empty: after every scheduled interval)", value: "" },
            ]}
            run={(v) =>
              post("/api/v1/backfills", {
                body: {
                  task: arg,
                  from: v.from ?? "",
                  to: v.to ?? "",
                  downstream: /^y/i.test(v.downstream ?? ""),
                  ...(v.priority?.trim() ? { priority: Number(v.priority) } : {}),
                },
              })
            }
          />
          {task.backfill?.backfillId && (
            <ActionButton
              who={who}
              label="Cancel backfill"
              title={`Cancel backfill ${task.backfill.backfillId}`}
              what={`This cancels backfill ${task.backfill.backfillId} (${task.backfill.from ? `${task.backfill.from} .. ` : "until "}${task.backfill.until}) on every task it walks: each returns to where it stood before it, one with an interval under way finishes that first.`}
              fields={[{ name: "reason", label: "Reason (optional)" }]}
              run={(v) =>
                post("/api/v1/backfills/{id}/cancel", {
                  path: { id: task.backfill?.backfillId ?? "" },
                  body: v.reason ? { reason: v.reason } : {},
                })
              }
            />
          )}
        </div>
      )}
    </div>
  );
}
