import { time } from "../format";
import type { CriticalPath, RunView } from "../schemas";

interface Bar {
  readonly task: string;
  readonly attempt: number;
  readonly status: string;
  readonly budget: string;
  readonly start: number;
  readonly end: number;
}

/** A run's attempts on a time line, the critical path's tasks marked. */
export function Gantt({ view, path }: { view: RunView; path: CriticalPath | null | undefined }) {
  const bars: Bar[] = [];
  for (const i of view.instances)
    for (const a of i.attempts) {
      const start = Date.parse(a.startedAt ?? a.intendedAt ?? "");
      const end = a.endedAt ? Date.parse(a.endedAt) : Date.now();
      bars.push({ task: i.task, attempt: a.attempt, status: a.status, budget: a.budgetText, start, end });
    }
  if (bars.length === 0) return <p>No attempts yet.</p>;
  const t0 = Math.min(...bars.map((b) => b.start));
  const t1 = Math.max(...bars.map((b) => b.end), t0 + 1);
  const critical = new Set((path?.links ?? []).map((l) => l.task));
  const tasks = [...new Set(bars.map((b) => b.task))];
  const W = 700;
  const L = 260;
  const rowH = 22;
  const x = (t: number) => L + ((t - t0) / (t1 - t0)) * W;
  return (
    <div>
      {/* biome-ignore lint/a11y/noSvgWithoutTitle: each bar has a title of its own */}
      <svg class="gantt" data-testid="gantt" width={L + W + 20} height={tasks.length * rowH + 30}>
        {tasks.map((t, i) => (
          <text x="4" y={i * rowH + 15} class={critical.has(t) ? "critical-label" : ""}>
            {t}
          </text>
        ))}
        {bars.map((b) => {
          const i = tasks.indexOf(b.task);
          return (
            <rect
              class={`bar s-${b.status}${critical.has(b.task) ? " critical" : ""}`}
              data-task={b.task}
              data-critical={critical.has(b.task) ? "yes" : "no"}
              data-status={b.status}
              x={x(b.start)}
              y={i * rowH + 3}
              width={Math.max(2, x(b.end) - x(b.start))}
              height={rowH - 6}
            >
              <title>
                {`${b.task} attempt ${b.attempt} (${b.budget}): ${b.status}, ${((b.end - b.start) / 1000).toFixed(2)} s`}
              </title>
            </rect>
          );
        })}
        <text x={L} y={tasks.length * rowH + 20}>
          {time(new Date(t0).toISOString())}
        </text>
        <text x={L + W} y={tasks.length * rowH + 20} text-anchor="end">
          +{((t1 - t0) / 1000).toFixed(2)} s
        </text>
      </svg>
      {path && (
        <p data-testid="critical-path">
          Critical path: {path.links.map((l) => l.task).join(" → ")} ({(path.pathMs / 1000).toFixed(2)} s of{" "}
          {(path.wallMs / 1000).toFixed(2)} s)
        </p>
      )}
    </div>
  );
}
