// The Chronolog web UI: hash-routed pages that read the HTTP API and follow its live events.
import htm from "htm";
import { h, render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import {
  clearToken,
  get,
  getToken,
  key,
  live,
  post,
  setToken,
  useLiveStatus,
  useLiveTick,
  useLoad,
} from "./api.js";
import { GraphView } from "./graph.js";

const html = htm.bind(h);

// ---- routing: #/page/arg?query (every page takes ?at=POSITION) ------------------------------
function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/grid";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean);
  return {
    page: parts[0] ?? "grid",
    arg: parts.slice(1).map(decodeURIComponent).join("/"),
    q: new URLSearchParams(query),
  };
}
const href = (page, arg, q = {}) => {
  const qs = new URLSearchParams(
    Object.entries(q).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  );
  const s = qs.toString();
  return `#/${page}${arg ? `/${encodeURIComponent(arg)}` : ""}${s ? `?${s}` : ""}`;
};
const go = (page, arg, q) => {
  location.hash = href(page, arg, q);
};
function useRoute() {
  const [r, setR] = useState(parseHash());
  useEffect(() => {
    const on = () => setR(parseHash());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return r;
}

const time = (s) => (s ? s.replace("T", " ").replace(/\.\d+Z$|Z$/, "Z") : "—");
const canOperate = (who) => who?.scope === "operate" || who?.scope === "admin";

// ---- confirmation of an action ---------------------------------------------------------------
let showConfirm = () => {};
/** Asks before an action: `what` says what will happen; `fields` are inputs it needs. */
export function confirmAction(o) {
  showConfirm(o);
}
function ConfirmDialog() {
  const [o, setO] = useState(null);
  const [values, setValues] = useState({});
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const box = useRef(null);
  // Focus moves into the dialog when it opens: its first field, or its Confirm button.
  useEffect(() => {
    box.current?.querySelector("input, button.primary")?.focus();
  }, [o]);
  showConfirm = (x) => {
    setO(x);
    setError(null);
    setValues(Object.fromEntries((x.fields ?? []).map((f) => [f.name, f.value ?? ""])));
  };
  if (!o) return null;
  const close = () => setO(null);
  const ok = async () => {
    setBusy(true);
    try {
      await o.run(values);
      setO(null);
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="backdrop">
    <div
      class="dialog"
      ref=${box}
      role="dialog"
      aria-modal="true"
      aria-labelledby="confirm-title"
      data-testid="confirm"
      onKeyDown=${(e) => e.key === "Escape" && close()}
    >
      <h2 id="confirm-title">${o.title}</h2>
      <p data-testid="confirm-what">${o.what}</p>
      ${(o.fields ?? []).map(
        (f, i) => html`<label
          >${f.label}
          <input
            name=${f.name}
            value=${values[f.name]}
            placeholder=${f.placeholder ?? ""}
            autofocus=${i === 0}
            onInput=${(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
        /></label>`,
      )}
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <div class="buttons">
        <button class="primary" data-testid="confirm-ok" disabled=${busy} onClick=${ok} autofocus=${!(o.fields ?? []).length}>
          ${o.ok ?? "Confirm"}
        </button>
        <button onClick=${close}>Cancel</button>
      </div>
    </div>
  </div>`;
}

function ActionButton({ who, label, ...o }) {
  if (!canOperate(who)) return null;
  return html`<button class="action" data-action=${label} onClick=${() => confirmAction(o)}>${label}</button>`;
}

// ---- shared bits -----------------------------------------------------------------------------
function Banner({ at, asOf }) {
  if (!at) return null;
  const [, hash = "", when = ""] = (asOf ?? "").split(" ");
  const { page, arg, q } = parseHash();
  const rest = Object.fromEntries([...q].filter(([k]) => k !== "at"));
  return html`<div class="banner" data-testid="as-of" role="status">
    Time travel: the state as it was after log position <strong>${at}</strong>
    ${when && ` (${time(when)}, hash ${hash.slice(0, 12)}…)`}. Nothing here changes live.
    <a href=${href(page, arg, rest)}>Back to now</a>
  </div>`;
}

function StateSelect({ label, value, options, onChange, name }) {
  return html`<label
    >${label}
    <select name=${name} value=${value ?? ""} onChange=${(e) => onChange(e.currentTarget.value)}>
      <option value="">all</option>
      ${options.map((o) => html`<option value=${o}>${o}</option>`)}
    </select></label
  >`;
}

function Err({ error }) {
  return error ? html`<p class="error" role="alert">${error.message}</p>` : null;
}

const GRID_STATES = [
  "success",
  "failed",
  "upstream_failed",
  "skipped",
  "running",
  "queued",
  "retry_wait",
  "blocked",
  "not_due",
  "waiting",
  "paused",
  "cancelled",
  "abandoned",
];
const label = (s) => (s === "not_due" ? "not due" : s.replace("_", " "));

// ---- grid ----------------------------------------------------------------------------------
function GridPage({ q }) {
  const at = q.get("at");
  const project = q.get("project") ?? "";
  const workflow = q.get("workflow") ?? "";
  const state = q.get("state") ?? "";
  const page = Number(q.get("page") ?? 0);
  const tick = useLiveTick(!at);
  const set = (k, v) => go("grid", "", { at, project, workflow, state, page: k === "page" ? v : 0, [k]: v });
  const r = useLoad(
    () => get(`/ui/grid?${new URLSearchParams({ project, workflow, state, page, limit: 100 })}`, at),
    [at, project, workflow, state, page, tick],
  );
  const g = r.data?.value;
  return html`<section>
    <${Banner} at=${at} asOf=${r.data?.asOf} />
    <h1>Tasks</h1>
    <div class="filters">
      <${StateSelect} label="Project" name="project" value=${project} options=${g?.projects ?? []} onChange=${(v) => set("project", v)} />
      <${StateSelect} label="Workflow" name="workflow" value=${workflow} options=${g?.workflows ?? []} onChange=${(v) => set("workflow", v)} />
      <${StateSelect} label="State" name="state" value=${state} options=${GRID_STATES} onChange=${(v) => set("state", v)} />
      <span class="pager">
        <button disabled=${page <= 0} onClick=${() => set("page", page - 1)}>‹ Prev</button>
        <span data-testid="page">page ${page + 1} of ${g?.pages ?? 1} (${g?.total ?? 0} tasks)</span>
        <button disabled=${!g || page + 1 >= g.pages} onClick=${() => set("page", page + 1)}>Next ›</button>
      </span>
    </div>
    <${Err} error=${r.error} />
    <table class="grid" data-testid="grid">
      <thead><tr><th>task</th><th>now</th><th colspan="8">recent logical dates, newest first</th></tr></thead>
      <tbody>
        ${(g?.rows ?? []).map(
          (row) => html`<tr data-task=${row.task}>
            <td><a href=${href("task", row.task, { at })}>${row.task}</a></td>
            <td class="cond" title=${row.reasons.join("\n")}>${row.condition}</td>
            ${row.cells.map(
              (c) => html`<td
                class=${`cell s-${c.state}`}
                data-state=${c.state}
                data-date=${c.logicalDate}
                title=${`${c.logicalDate}: ${label(c.state)}`}
              >
                ${label(c.state)}<small>${c.logicalDate.slice(5, 16).replace("T", " ")}</small>
              </td>`,
            )}
          </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

// ---- graph ---------------------------------------------------------------------------------
function GraphPage({ q, who }) {
  const at = q.get("at");
  const project = q.get("project") ?? "";
  const workflow = q.get("workflow") ?? "";
  const tick = useLiveTick(!at);
  const r = useLoad(
    () => get(`/ui/graph?${new URLSearchParams({ project, workflow })}`, at),
    [at, project, workflow, tick],
  );
  const meta = useLoad(() => get("/ui/grid?limit=1", at), [at]);
  const g = r.data?.value;
  const wf = workflow;
  return html`<section>
    <${Banner} at=${at} asOf=${r.data?.asOf} />
    <h1>Graph</h1>
    <div class="filters">
      <${StateSelect} label="Project" name="project" value=${project} options=${meta.data?.value.projects ?? []} onChange=${(v) => go("graph", "", { at, project: v })} />
      <${StateSelect} label="Workflow" name="workflow" value=${workflow} options=${meta.data?.value.workflows ?? []} onChange=${(v) => go("graph", "", { at, workflow: v })} />
      ${wf && !at && html`<${TriggerButton} who=${who} workflow=${wf} />`}
      <span>${g ? `${g.nodes.length} nodes, ${g.edges.length} edges` : "loading…"}</span>
    </div>
    <${Err} error=${r.error} />
    ${g && html`<${GraphView} nodes=${g.nodes} edges=${g.edges} colour=${(n) => n.condition} onOpen=${(n) => go("task", n.id, { at })} />`}
  </section>`;
}

function TriggerButton({ who, workflow }) {
  return html`<${ActionButton}
    who=${who}
    label=${`Trigger ${workflow}`}
    title=${`Trigger a run of ${workflow}`}
    what=${`This starts a run of workflow ${workflow} now, outside its schedule (logical date: now, unless you give one), with the params below (NAME=VALUE, comma-separated).`}
    fields=${[
      { name: "params", label: "Params", placeholder: "region=eu, day=..." },
      { name: "logicalDate", label: "Logical date (optional)", placeholder: "2026-12-01T00:00Z" },
    ]}
    ok="Trigger"
    run=${async (v) => {
      const params = Object.fromEntries(
        v.params
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean)
          .map((s) => [s.slice(0, s.indexOf("=")), s.slice(s.indexOf("=") + 1)]),
      );
      const body = { params, ...(v.logicalDate ? { logicalDate: v.logicalDate } : {}) };
      const r = await post(`/api/v1/workflows/${encodeURIComponent(workflow)}/runs`, body);
      if (r.value?.runId) go("run", r.value.runId);
    }}
  />`;
}

// ---- task ------------------------------------------------------------------------------------
function TaskPage({ arg, q, who }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const t = useLoad(() => get(`/api/v1/tasks/${key(arg)}`, at), [arg, at, tick]);
  const a = useLoad(() => get(`/api/v1/tasks/${key(arg)}/attempts`, at), [arg, at, tick]);
  const hist = useLoad(() => get(`/api/v1/tasks/${key(arg)}/history`, at), [arg, at, tick]);
  const head = useLoad(() => get("/api/v1/log/head"), [tick]);
  const d = t.data?.value;
  const task = d?.task;
  const events = hist.data?.value ?? [];
  const headPos = Number(head.data?.value.position ?? 0);
  return html`<section>
    <${Banner} at=${at} asOf=${t.data?.asOf} />
    <h1>Task <code>${arg}</code></h1>
    <${Err} error=${t.error} />
    ${
      d &&
      html`<div class="card" data-testid="where">
        <p>
          <span class=${`pill s-${d.condition}`} data-testid="condition">${d.condition}</span>
          ${" status "}<strong data-testid="status">${task.status}</strong>${", interval "}<code>${time(task.logicalDate)}</code>${`, due ${time(task.nextRunDate)}`}
          ${task.spec.workflow && html` · workflow <a href=${href("graph", "", { workflow: task.spec.workflow, at })}>${task.spec.workflow}</a>`}
        </p>
        <ul data-testid="reasons">
          ${d.reasons.map((r) => html`<li>${r}</li>`)}
        </ul>
        ${
          !at &&
          html`<div class="actions">
            ${
              task.status === "paused"
                ? html`<${ActionButton}
                    who=${who}
                    label="Resume"
                    title=${`Resume ${arg}`}
                    what=${`This resumes ${arg}: the scheduler runs its intervals again, from ${task.logicalDate}.`}
                    run=${() => post(`/api/v1/tasks/${key(arg)}/resume`)}
                  />`
                : html`<${ActionButton}
                    who=${who}
                    label="Pause"
                    title=${`Pause ${arg}`}
                    what=${`This pauses ${arg}: no new attempt of it starts until it is resumed (one running now finishes). The event carries your token's actor, ${who?.actor}.`}
                    fields=${[{ name: "reason", label: "Reason (optional)" }]}
                    run=${(v) => post(`/api/v1/tasks/${key(arg)}/pause`, v.reason ? { reason: v.reason } : {})}
                  />`
            }
            <${ActionButton}
              who=${who}
              label="Backfill"
              title=${`Backfill ${arg}`}
              what=${`This re-runs every interval of ${arg} from FROM to TO (logical dates), and its subtree if you say so.`}
              fields=${[
                { name: "from", label: "From", value: task.prevIntervalStart ?? task.logicalDate },
                { name: "to", label: "To", value: task.logicalDate },
                { name: "downstream", label: "Downstream too (yes/no)", value: "no" },
              ]}
              run=${(v) => post("/api/v1/backfills", { task: arg, from: v.from, to: v.to, downstream: /^y/i.test(v.downstream) })}
            />
          </div>`
        }
      </div>`
    }
    <h2>Attempts</h2>
    <table class="list" data-testid="attempts">
      <thead><tr><th>interval</th><th>#</th><th>token</th><th>worker</th><th>state</th><th>started</th><th>ended</th><th>exit</th><th>output (tail)</th><th></th></tr></thead>
      <tbody>
        ${(a.data?.value ?? [])
          .slice()
          .reverse()
          .map(
            (x) => html`<tr key=${x.token} data-token=${x.token}>
              <td>${time(x.logicalDate)}</td>
              <td>${x.attempt}</td>
              <td><code>${x.token.slice(0, 12)}</code></td>
              <td>${x.workerId ?? "—"}</td>
              <td><span class=${`pill s-${x.status}`}>${x.status}</span></td>
              <td>${time(x.startedAt)}</td>
              <td>${time(x.endedAt)}</td>
              <td>${x.exitCode ?? x.endReason ?? "—"}</td>
              <td>
                ${
                  !at && x.status === "running"
                    ? html`<${LiveOutput} token=${x.token} />`
                    : html`<pre class="tail">${(x.stdoutTail + x.stderrTail).split("\n").slice(-4).join("\n")}</pre>`
                }
                <a href=${`/api/v1/attempts/${x.token}/output`} onClick=${openOutput(x.token)}>whole output</a></td>
              <td>
                ${
                  !at &&
                  (x.status === "running" || x.status === "queued") &&
                  html`<${ActionButton}
                    who=${who}
                    label="Abandon"
                    title=${`Abandon attempt ${x.attempt} of ${arg}`}
                    what=${`This abandons attempt ${x.attempt} (token ${x.token.slice(0, 12)}…): its worker's report will not count. Retry: type yes to start a new attempt after it.`}
                    fields=${[{ name: "retry", label: "Retry (yes/no)", value: "no" }]}
                    run=${(v) => post(`/api/v1/attempts/${x.token}/abandon`, { retry: /^y/i.test(v.retry) })}
                  />`
                }
              </td>
            </tr>`,
          )}
      </tbody>
    </table>
    <h2>History</h2>
    ${head.data && html`<${Slider} at=${at} max=${headPos} page="task" arg=${arg} />`}
    <ol class="timeline" data-testid="history">
      ${events.map(
        (e) => html`<li data-position=${e.position} data-type=${e.type}>
          <span class="pos"><a href=${href("task", arg, { at: e.position })}>#${e.position}</a></span>
          <span class="when">${time(e.metadata.recordedAt)}</span>
          <strong>${e.type}</strong>
          <span class="actor" data-testid="actor">${e.metadata.actor ?? "—"}</span>
          <span class="stream">${e.streamId}</span>
          ${e.metadata.causationId && html`<span class="cause">caused by ${e.metadata.causationId}</span>`}
        </li>`,
      )}
    </ol>
  </section>`;
}

/** A running attempt's output as it comes (`?follow=true`), its last lines shown. */
function LiveOutput({ token }) {
  const [text, setText] = useState("");
  useEffect(() => {
    const ctl = new AbortController();
    (async () => {
      const r = await fetch(`/api/v1/attempts/${token}/output?follow=true`, {
        headers: { authorization: `Bearer ${getToken()}` },
        signal: ctl.signal,
      });
      if (!r.ok || !r.body) return;
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const chunk = decoder.decode(value, { stream: true });
        setText((t) => (t + chunk).slice(-4096));
      }
    })().catch(() => {});
    return () => ctl.abort();
  }, [token]);
  return html`<pre class="tail live-output" data-testid="live-output">${text.split("\n").slice(-6).join("\n")}</pre>`;
}

/** The whole output needs the token: fetched and shown in a new window rather than a plain link. */
const openOutput = (token) => async (ev) => {
  ev.preventDefault();
  const w = open("", "_blank");
  const r = await fetch(`/api/v1/attempts/${token}/output`, {
    headers: { authorization: `Bearer ${getToken()}` },
  });
  const text = await r.text();
  if (w) {
    w.document.title = `output of ${token}`;
    const pre = w.document.createElement("pre");
    pre.textContent = text;
    w.document.body.append(pre);
  }
};

function Slider({ at, max: head, page, arg, extra = {} }) {
  const max = Math.max(head, Number(at ?? 0));
  const [v, setV] = useState(at ?? String(max));
  useEffect(() => setV(at ?? String(max)), [at, max]);
  return html`<div class="slider">
    <label
      >Log position
      <input
        type="range"
        data-testid="slider"
        min="0"
        max=${max}
        value=${v}
        onInput=${(e) => setV(e.currentTarget.value)}
        onChange=${(e) => go(page, arg, { ...extra, at: e.currentTarget.value })}
    /></label>
    <output>${v}</output>
    ${at && html`<a href=${href(page, arg, extra)}>now</a>`}
  </div>`;
}

// ---- runs ----------------------------------------------------------------------------------
function RunsPage({ q }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const r = useLoad(() => get("/api/v1/runs", at), [at, tick]);
  return html`<section>
    <${Banner} at=${at} asOf=${r.data?.asOf} />
    <h1>Runs</h1>
    <${Err} error=${r.error} />
    <table class="list" data-testid="runs">
      <thead><tr><th>run</th><th>status</th><th>try</th><th>trigger</th><th>started</th><th>finished</th></tr></thead>
      <tbody>
        ${(r.data?.value ?? []).map(
          (x) => html`<tr data-run=${x.runId}>
            <td><a href=${href("run", x.runId, { at })}>${x.runId}</a></td>
            <td><span class=${`pill s-${x.status}`}>${x.status}</span></td>
            <td>${x.try}</td><td>${x.trigger}</td><td>${time(x.startedAt)}</td><td>${time(x.finishedAt)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

const SETS = ["success", "failed", "skipped", "upstream_failed", "cancelled"];

function RunPage({ arg, q, who }) {
  const at = q.get("at");
  const tick = useLiveTick(!at);
  const r = useLoad(() => get(`/api/v1/runs/${encodeURIComponent(arg)}`, at), [arg, at, tick]);
  const cp = useLoad(() => get(`/api/v1/runs/${encodeURIComponent(arg)}/critical-path`, at), [arg, at, tick]);
  const g = useLoad(() => get(`/ui/graph?run=${encodeURIComponent(arg)}`, at), [arg, at, tick]);
  const v = r.data?.value;
  const sets = {};
  for (const s of SETS) sets[s] = [];
  // Each task's state in the run: its instance's, as the run's tries were folded, else the run's record.
  const states = { ...(v?.run.outcomes ?? {}) };
  for (const i of v?.instances ?? []) if (i.instance) states[i.task] = i.instance.status;
  for (const [task, s] of Object.entries(states)) if (sets[s]) sets[s].push(task);
  return html`<section>
    <${Banner} at=${at} asOf=${r.data?.asOf} />
    <h1>Run <code>${arg}</code></h1>
    <${Err} error=${r.error} />
    ${
      v &&
      html`<div class="card">
        <p>
          <span class=${`pill s-${v.run.status}`} data-testid="run-status">${v.run.status}</span>
          ${` try ${v.run.try} (${v.run.trigger}${v.run.actor ? ` by ${v.run.actor}` : ""}), started ${time(v.run.startedAt)}, finished ${time(v.run.finishedAt)}`}
        </p>
        <div class="sets" data-testid="sets">
          ${SETS.map(
            (s) => html`<div data-set=${s}>
              <span class=${`pill s-${s}`}>${label(s)}</span>${` ${sets[s].length} `}<small>${sets[s].join(", ")}</small>
            </div>`,
          )}
        </div>
        ${
          !at &&
          html`<div class="actions">
            <${ActionButton}
              who=${who}
              label="Rerun failed"
              title=${`Rerun what failed in ${arg}`}
              what=${`This re-executes the tasks of ${arg} that did not succeed, and everything below them (${sets.failed.length} failed, ${sets.upstream_failed.length} upstream failed).`}
              run=${() => post(`/api/v1/runs/${encodeURIComponent(arg)}/rerun`, { failedOnly: true })}
            />
            <${TriggerButton} who=${who} workflow=${v.run.workflow} />
          </div>`
        }
      </div>`
    }
    <h2>Graph</h2>
    ${g.data && html`<${GraphView} nodes=${g.data.value.nodes} edges=${g.data.value.edges} colour=${(n) => n.state ?? n.condition} onOpen=${(n) => go("task", n.id, { at })} />`}
    <h2>Gantt</h2>
    ${v && html`<${Gantt} view=${v} path=${cp.data?.value} />`}
  </section>`;
}

function Gantt({ view, path }) {
  const bars = [];
  for (const i of view.instances)
    for (const a of i.attempts) {
      const start = Date.parse(a.startedAt ?? a.intendedAt);
      const end = a.endedAt ? Date.parse(a.endedAt) : Date.now();
      bars.push({ task: i.task, attempt: a.attempt, status: a.status, start, end });
    }
  if (bars.length === 0) return html`<p>No attempts yet.</p>`;
  const t0 = Math.min(...bars.map((b) => b.start));
  const t1 = Math.max(...bars.map((b) => b.end), t0 + 1);
  const critical = new Set((path?.links ?? []).map((l) => l.task));
  const tasks = [...new Set(bars.map((b) => b.task))];
  const W = 700;
  const L = 260;
  const rowH = 22;
  const x = (t) => L + ((t - t0) / (t1 - t0)) * W;
  return html`<div>
    <svg class="gantt" data-testid="gantt" width=${L + W + 20} height=${tasks.length * rowH + 30}>
      ${tasks.map(
        (t, i) =>
          html`<text x="4" y=${i * rowH + 15} class=${critical.has(t) ? "critical-label" : ""}>${t}</text>`,
      )}
      ${bars.map((b) => {
        const i = tasks.indexOf(b.task);
        return html`<rect
          class=${`bar s-${b.status}${critical.has(b.task) ? " critical" : ""}`}
          data-task=${b.task}
          data-critical=${critical.has(b.task) ? "yes" : "no"}
          x=${x(b.start)}
          y=${i * rowH + 3}
          width=${Math.max(2, x(b.end) - x(b.start))}
          height=${rowH - 6}
        ><title>${b.task} attempt ${b.attempt}: ${b.status}, ${((b.end - b.start) / 1000).toFixed(2)} s</title></rect>`;
      })}
      <text x=${L} y=${tasks.length * rowH + 20}>${time(new Date(t0).toISOString())}</text>
      <text x=${L + W} y=${tasks.length * rowH + 20} text-anchor="end">+${((t1 - t0) / 1000).toFixed(2)} s</text>
    </svg>
    ${path && html`<p data-testid="critical-path">Critical path: ${path.links.map((l) => l.task).join(" → ")} (${(path.pathMs / 1000).toFixed(2)} s of ${(path.wallMs / 1000).toFixed(2)} s)</p>`}
  </div>`;
}

// ---- log -------------------------------------------------------------------------------------
function LogPage({ q }) {
  const at = q.get("at");
  const tick = useLiveTick(true);
  const head = useLoad(() => get("/api/v1/log/head"), [tick]);
  const headPos = Number(head.data?.value.position ?? -1);
  const pageSize = 50;
  const from = q.get("from") ?? (at ? String(Math.max(0, Number(at) - pageSize + 1)) : null);
  const start = from ?? String(Math.max(0, headPos - pageSize + 1));
  const r = useLoad(
    () => get(`/api/v1/log?from=${start}&limit=${pageSize}`),
    [start, from === null ? tick : 0],
  );
  const [verify, setVerify] = useState(null);
  const [tail, setTail] = useState([]);
  useEffect(() => {
    const l = (e) => e && setTail((t) => [e, ...t].slice(0, 500));
    live.listeners.add(l);
    return () => live.listeners.delete(l);
  }, []);
  const events = (r.data?.value.events ?? []).filter((e) => !at || Number(e.position) <= Number(at));
  return html`<section>
    <${Banner} at=${at} asOf=${at ? `${at}` : null} />
    <h1>Log</h1>
    <div class="card">
      <p data-testid="head">
        Head: position <strong>${head.data?.value.position ?? "…"}</strong>, hash
        <code>${head.data?.value.hash ?? ""}</code>
      </p>
      <button
        data-testid="verify"
        onClick=${async () => {
          setVerify({ running: true });
          setVerify((await post("/api/v1/log/verify")).value);
        }}
      >
        Verify the hash chain
      </button>
      ${
        verify &&
        !verify.running &&
        html`<p data-testid="verify-result" class=${verify.ok ? "ok" : "error"}>
          ${verify.ok ? "intact" : `broken at ${verify.break.position}: ${verify.break.reason}`}: ${verify.checked} events checked, head
          ${verify.headPosition} <code>${verify.headHash}</code>
        </p>`
      }
    </div>
    ${head.data && html`<${Slider} at=${at} max=${Math.max(0, headPos)} page="log" arg="" />`}
    <div class="pager">
      <button disabled=${Number(start) <= 0} onClick=${() => go("log", "", { at, from: Math.max(0, Number(start) - pageSize) })}>‹ Older</button>
      <span data-testid="log-range">positions ${start}–${Number(start) + events.length - 1}</span>
      <button disabled=${!r.data?.value.next} onClick=${() => go("log", "", { at, from: r.data.value.next })}>Newer ›</button>
      <a href=${href("log", "", { at })}>latest</a>
    </div>
    <table class="list" data-testid="log">
      <thead><tr><th>#</th><th>time</th><th>type</th><th>stream</th><th>actor</th></tr></thead>
      <tbody>
        ${events
          .slice()
          .reverse()
          .map(
            (e) => html`<tr data-position=${e.position}>
              <td><a href=${href("log", "", { at: e.position })}>${e.position}</a></td>
              <td>${time(e.metadata.recordedAt)}</td><td>${e.type}</td><td>${e.streamId}</td><td>${e.metadata.actor ?? "—"}</td>
            </tr>`,
          )}
      </tbody>
    </table>
    <h2>Live tail</h2>
    <ol class="timeline" data-testid="tail">
      ${tail.map((e) => html`<li data-position=${e.position}><span class="pos">#${e.position}</span> <strong>${e.type}</strong> ${e.streamId} <span class="actor">${e.metadata?.actor ?? ""}</span></li>`)}
    </ol>
  </section>`;
}

// ---- login and the frame -------------------------------------------------------------------
function Login({ onIn, error }) {
  const [t, setT] = useState("");
  return html`<form
    class="login card"
    onSubmit=${(e) => {
      e.preventDefault();
      setToken(t.trim());
      onIn();
    }}
  >
    <h1>Chronolog</h1>
    <p>Log in with a token from <code>chronolog token create NAME --scope read|operate|admin</code>.</p>
    <label>Token <input name="token" type="password" autofocus value=${t} onInput=${(e) => setT(e.currentTarget.value)} /></label>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <button class="primary" type="submit">Log in</button>
  </form>`;
}

function LiveStatus() {
  const { status, last } = useLiveStatus();
  return html`<span class=${`live ${status}`} data-testid="live" data-status=${status}>
    ${status === "lost" ? `connection lost: resuming from position ${last === null ? "the head" : String(last + 1n)}…` : status}
  </span>`;
}

function App() {
  const route = useRoute();
  const [who, setWho] = useState(null);
  const [error, setError] = useState(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (!getToken()) return;
    get("/ui/whoami").then(
      (r) => {
        setWho(r.value);
        setError(null);
        live.start(r.value.eventTypes, r.value.position);
      },
      (e) => {
        clearToken();
        setError(e.message);
      },
    );
  }, [attempt]);
  if (!getToken() || !who) return html`<${Login} error=${error} onIn=${() => setAttempt((a) => a + 1)} />`;
  const at = route.q.get("at");
  const nav = (page, text) =>
    html`<a class=${route.page === page ? "current" : ""} href=${href(page, "", { at })}>${text}</a>`;
  const Page =
    { grid: GridPage, graph: GraphPage, task: TaskPage, run: RunPage, runs: RunsPage, log: LogPage }[
      route.page
    ] ?? GridPage;
  return html`<div>
    <header>
      <strong class="brand">Chronolog</strong>
      <nav>${nav("grid", "Grid")} ${nav("graph", "Graph")} ${nav("runs", "Runs")} ${nav("log", "Log")}</nav>
      <${LiveStatus} />
      <span class="who" data-testid="who">${who.name} (${who.scope})</span>
      <button
        onClick=${() => {
          clearToken();
          live.stop();
          setWho(null);
        }}
      >
        Log out
      </button>
    </header>
    <main><${Page} key=${`${route.page}/${route.arg}`} arg=${route.arg} q=${route.q} who=${who} /></main>
    <${ConfirmDialog} />
  </div>`;
}

render(html`<${App} />`, document.getElementById("app"));
