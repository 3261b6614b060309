import { useEffect, useState } from "preact/hooks";
import { get } from "../api";
import { fetchOutput, LiveOutput, type WholeOutput } from "../components/attempt-output";
import { Banner } from "../components/banner";
import { Err } from "../components/err";
import { time } from "../format";
import { href } from "../router";
import type { Attempt } from "../schemas";
import { useLoad } from "../use-load";

/** `TASK/INTERVAL/ATTEMPT` (the task key has slashes of its own; the interval and number have none). */
export function parseOutputArg(arg: string): { task: string; interval: string; attempt: number } | null {
  const parts = arg.split("/");
  const attempt = Number(parts.pop());
  const interval = parts.pop() ?? "";
  const task = parts.join("/");
  if (!task || !interval || !Number.isInteger(attempt) || attempt < 1) return null;
  return { task, interval, attempt };
}

/** What the check of the output against the size and SHA-256 its attempt's end recorded says. */
function checkText(check: string | null, a: Attempt): string {
  const file = a.outputFile;
  const recorded = file ? `${file.bytes} bytes, SHA-256 ${file.sha256}` : "";
  switch (check) {
    case "ok":
      return `intact: the file matches what the attempt's end recorded (${recorded})`;
    case "changed":
      return `changed: the file no longer matches what the attempt's end recorded (${recorded})`;
    case "unchecked":
      return "unchecked: the attempt's end recorded no size or hash for its output";
    case "running":
      return "not checked yet: the attempt has not ended (its output is shown live below)";
    default:
      return "unknown";
  }
}

/** One attempt's whole output, with its task, interval, attempt and the check of its integrity. */
export function OutputPage({ arg, q }: { arg: string; q: URLSearchParams }) {
  const at = q.get("at");
  const where = parseOutputArg(arg);
  const list = useLoad(
    () =>
      where
        ? get("/api/v1/tasks/{key}/attempts", { path: { key: where.task } }, at)
        : Promise.reject(new Error(`"${arg}" does not name an attempt: #/output/TASK/INTERVAL/ATTEMPT`)),
    [arg, at],
  );
  const a = ((list.data?.value ?? []) as Attempt[]).find(
    (x) => where && Date.parse(x.logicalDate) === Date.parse(where.interval) && x.attempt === where.attempt,
  );
  const [out, setOut] = useState<WholeOutput | null>(null);
  useEffect(() => {
    setOut(null);
    if (a && a.status !== "running") fetchOutput(a.token).then(setOut, () => {});
  }, [a?.token, a?.status]);
  return (
    <section>
      <Banner at={at} asOf={list.data?.asOf} />
      <h1>Output</h1>
      <Err error={list.error} />
      {where && list.data && !a && (
        <p class="error" data-testid="no-attempt">
          {where.task} has no attempt {where.attempt} for the interval {time(where.interval)}.
        </p>
      )}
      {where && a && (
        <div class="card" data-testid="output-of">
          <p>
            {"Task "}
            <a href={href("task", where.task, { at })} data-testid="output-task">
              {where.task}
            </a>
            {", interval "}
            <code data-testid="output-interval">{time(a.logicalDate)}</code>
            {", attempt "}
            <strong data-testid="output-attempt">{a.attempt}</strong>
            {` (${a.budgetText}), `}
            <span class={`pill s-${a.status}`}>{a.status}</span>
            {a.endReason ? ` ${a.endReason}` : ""}
          </p>
          <p>
            {"Token "}
            <code>{a.token}</code>
            {`, started ${time(a.startedAt)}, ended ${time(a.endedAt)}`}
          </p>
          <p data-testid="integrity" data-check={a.status === "running" ? "running" : (out?.check ?? "")}>
            {"Integrity: "}
            {a.status === "running"
              ? checkText("running", a)
              : out === null
                ? "checking…"
                : out.problem
                  ? `no output to check: ${out.problem}`
                  : checkText(out.check, a)}
          </p>
        </div>
      )}
      {a && a.status === "running" && <LiveOutput token={a.token} lines={10_000} />}
      {a && out && !out.problem && (
        <pre class="output" data-testid="output">
          {out.text === "" ? "(the attempt wrote nothing)" : out.text}
        </pre>
      )}
    </section>
  );
}
