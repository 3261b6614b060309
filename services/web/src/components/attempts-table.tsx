import { post } from "../api";
import { time } from "../format";
import { href } from "../router";
import type { Attempt, Whoami } from "../schemas";
import { ActionButton } from "./action-button";
import { LiveOutput } from "./attempt-output";

/** The route of an attempt's whole output: #/output/TASK/INTERVAL/ATTEMPT. */
export const outputHref = (task: string, interval: string, attempt: number, at: string | null): string =>
  href("output", `${task}/${interval}/${attempt}`, { at });

/** A task's attempts, newest first: a running one's output live, one in flight may be abandoned. */
export function AttemptsTable({
  task,
  attempts,
  at,
  who,
}: {
  task: string;
  attempts: readonly Attempt[];
  at: string | null;
  who: Whoami | null;
}) {
  return (
    <table class="list attempts" data-testid="attempts">
      <thead>
        <tr>
          <th>interval</th>
          <th>#</th>
          <th>retry budget</th>
          <th>token</th>
          <th>worker</th>
          <th>state</th>
          <th>started</th>
          <th>ended</th>
          <th>exit</th>
          <th>output (tail)</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {attempts
          .slice()
          .reverse()
          .map((x) => {
            const why = x.exitCode ?? x.endReason ?? "—";
            return (
              <tr key={x.token} data-token={x.token} data-status={x.status}>
                <td>{time(x.logicalDate)}</td>
                <td>{x.attempt}</td>
                <td data-testid="budget">{x.budgetText}</td>
                <td>
                  <code>{x.token.slice(0, 12)}</code>
                </td>
                <td>{x.workerId ?? "—"}</td>
                <td>
                  <span class={`pill s-${x.status}`}>{x.status}</span>
                </td>
                <td>{time(x.startedAt)}</td>
                <td>{time(x.endedAt)}</td>
                <td>
                  <div class="why-text" data-testid="why" title={String(why)}>
                    {why}
                  </div>
                </td>
                <td>
                  {!at && x.status === "running" ? (
                    <LiveOutput token={x.token} />
                  ) : (
                    <pre class="tail">{(x.stdoutTail + x.stderrTail).split("\n").slice(-4).join("\n")}</pre>
                  )}
                  <a href={outputHref(task, x.logicalDate, x.attempt, at)} data-testid="whole-output">
                    whole output
                  </a>
                </td>
                <td>
                  {!at &&
                    (x.status === "running" || x.status === "queued" || x.status === "lease_expired") && (
                      <ActionButton
                        who={who}
                        label="Abandon"
                        title={`Abandon attempt ${x.attempt} of ${task}`}
                        what={`This abandons attempt ${x.attempt} (token ${x.token.slice(0, 12)}…): its worker's report will not count. Retry: type yes to start a new attempt after it.`}
                        fields={[{ name: "retry", label: "Retry (yes/no)", value: "no" }]}
                        run={(v) =>
                          post("/api/v1/attempts/{token}/abandon", {
                            path: { token: x.token },
                            body: { retry: /^y/i.test(v.retry ?? "") },
                          })
                        }
                      />
                    )}
                </td>
              </tr>
            );
          })}
      </tbody>
    </table>
  );
}
