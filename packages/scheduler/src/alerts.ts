import { spawn } from "node:child_process";
import {
  type AlertKind,
  type AlertSink,
  type AlertState,
  type AlertSubject,
  alertMessage,
  decideDelivery,
  evolveAlert,
  formatTaskKey,
  raiseAlert,
  type SchedulerProjection,
  type TaskKey,
} from "@chronolog/core";
import type { EventLog, StreamWrite } from "@chronolog/log";
import { renderTemplateWith, type TemplateVariables } from "@chronolog/render";
import { handleCommand } from "./command.js";

/**
 * The alert to write in the same append as its cause, if the task's (or, for a run, the
 * workflow's) declaration has a sink for the kind: none otherwise.
 */
export function alertWrites(
  projection: SchedulerProjection,
  kind: AlertKind,
  subject: AlertSubject,
  once: string,
): StreamWrite[] {
  let sinks: readonly AlertSink[] = [];
  if (kind === "run_failed")
    sinks = (subject.workflow && projection.workflows.get(subject.workflow)?.alerts) || [];
  else if (subject.task) sinks = projection.tasks.get(formatTaskKey(subject.task))?.spec.alerts ?? [];
  const raised = raiseAlert(kind, sinks, subject, once);
  return raised ? [{ streamId: raised.streamId, events: [raised.event], expectedRevision: "no_stream" }] : [];
}

/** What a sink's templates see: `alert.kind`, `.task`, `.interval`, `.run`, `.workflow`, `.reason`, `.message`. */
export function alertVariables(a: AlertState): TemplateVariables {
  const r = a.raised;
  return {
    alert: {
      id: a.alertId,
      kind: r.kind,
      task: r.task ? formatTaskKey(r.task) : "",
      interval: r.logicalDate ?? "",
      run: r.runId ?? "",
      workflow: r.workflow ?? "",
      reason: r.reason,
      message: alertMessage(r),
      raised_at: a.raisedAt,
    },
  } as unknown as TemplateVariables;
}

export interface AlertSenderOptions {
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  readonly now?: () => number;
  /** Whether this process delivers alerts about this task or workflow (a shard it owns). */
  readonly owns?: (subject: { task?: TaskKey; workflow?: string }) => boolean;
  readonly logger?: { info(o: object, m?: string): void; error(o: object, m?: string): void };
  /** Time between looks for due deliveries. */
  readonly intervalMs?: number;
  /**
   * How a command sink runs: as this user, in this environment (computed for each delivery;
   * the CHRONOLOG_ALERT_* variables are added), in this directory. A sink's command comes from
   * a declaration, as a task's does, and gets what a task gets. Default: this process's user,
   * environment and directory.
   */
  readonly commands?: AlertCommandSandbox;
}

export interface AlertCommandSandbox {
  readonly uid?: number;
  readonly gid?: number;
  env(): NodeJS.ProcessEnv;
  readonly cwd?: string;
}

const BODY_LIMIT = 4096;

/**
 * The variable an alert command finds an alert field in: `alert.reason` -> `CHRONOLOG_ALERT_REASON`
 * (every field of `alert`), for a value used inside quotes or a here-document.
 */
export function alertEnvName(expression: string): string | undefined {
  const m = /^alert\.([a-z_]+)$/.exec(expression.trim());
  return m ? `CHRONOLOG_ALERT_${(m[1] as string).toUpperCase()}` : undefined;
}

/** Every field of `alert` as an environment variable (see `alertEnvName`). */
export function alertEnvironment(variables: TemplateVariables): Record<string, string> {
  const alert = (variables as unknown as { alert: Record<string, string> }).alert;
  return Object.fromEntries(
    Object.entries(alert).map(([k, v]) => [alertEnvName(`alert.${k}`) as string, String(v ?? "")]),
  );
}

/**
 * Delivers raised alerts: each sink of each alert the projection holds as not yet delivered,
 * when its try is due, runs the command (`/bin/sh -c`, every interpolated value shell-quoted)
 * or makes the HTTP request (a 2xx is delivered), within the sink's timeout, and records the
 * outcome (AlertDelivered, or AlertDeliveryFailed with the next try's time). It runs beside
 * the scheduler and never holds it up: a hanging sink only delays its own alert.
 */
export class AlertSender {
  private timer: NodeJS.Timeout | null = null;
  private readonly busy = new Set<string>();
  /** Alert stream -> the revision this sender last wrote, until the projection has it. */
  private readonly written = new Map<string, bigint>();
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly o: AlertSenderOptions) {
    this.now = o.now ?? Date.now;
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.sweep();
      this.timer = setTimeout(tick, this.o.intervalMs ?? 250);
      this.timer.unref();
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Starts every delivery that is due and not under way. */
  sweep(): void {
    const now = this.now();
    for (const a of this.o.projection.alerts.values()) {
      const mine = this.written.get(a.stream);
      if (mine !== undefined) {
        if (a.revision < mine) continue;
        this.written.delete(a.stream);
      }
      if (this.o.owns && !this.o.owns({ task: a.raised.task, workflow: a.raised.workflow })) continue;
      a.sinks.forEach((s, i) => {
        if (s.delivered || s.retryAt === null || Date.parse(s.retryAt) > now) return;
        const id = `${a.stream}#${i}`;
        if (this.busy.has(id)) return;
        this.busy.add(id);
        void this.deliver(a, i).finally(() => this.busy.delete(id));
      });
    }
  }

  private async deliver(a: AlertState, index: number): Promise<void> {
    const sink = a.raised.sinks[index] as AlertSink;
    let outcome: { ok: true } | { ok: false; error: string };
    try {
      outcome = await send(sink, alertVariables(a), this.o.commands);
    } catch (error) {
      outcome = { ok: false, error: (error as Error).message };
    }
    try {
      const result = await handleCommand(this.o.log, {
        name: `deliver ${a.alertId}`,
        // Another sink of the alert recorded first: read the stream again and record this one after.
        read: async (fresh) => (fresh ? ((await readAlert(this.o.log, a.stream)) ?? a) : a),
        onConflict: (_e, tries) => (tries < 5 ? "retry" : "give_up"),
        decide: (state) => ({
          writes: [
            {
              streamId: state.stream,
              events: [decideDelivery(state, index, outcome, this.now())],
              expectedRevision: state.revision,
            },
          ],
          result: null,
        }),
      });
      if (result.kind === "written") {
        this.written.set(
          a.stream,
          (result.results[0] as { nextExpectedRevision: bigint }).nextExpectedRevision,
        );
        if (outcome.ok) this.o.logger?.info({ alert: a.alertId, sink: index }, "alert delivered");
        else
          this.o.logger?.error({ alert: a.alertId, sink: index, err: outcome.error }, "alert not delivered");
      }
    } catch (error) {
      this.o.logger?.error({ err: error, alert: a.alertId }, "could not record an alert's delivery");
    }
  }
}

async function readAlert(log: EventLog, stream: string): Promise<AlertState | undefined> {
  let state: AlertState | undefined;
  for (const e of await log.readStream(stream))
    state = evolveAlert(state, e, {
      revision: e.revision,
      recordedAt: e.metadata.recordedAt,
      streamId: stream,
    });
  return state;
}

/** One delivery of a sink. */
async function send(
  sink: AlertSink,
  variables: TemplateVariables,
  sandbox: AlertCommandSandbox | undefined,
): Promise<{ ok: true } | { ok: false; error: string }> {
  if (sink.command !== undefined) {
    const command = renderTemplateWith(sink.command, variables, "alerts.command", {
      escaping: "shell",
      envName: alertEnvName,
    });
    return runCommand(command, sink.timeoutMs, variables, sandbox);
  }
  const http = sink.http as NonNullable<AlertSink["http"]>;
  const url = renderTemplateWith(http.url, variables, "alerts.http.url", { escaping: "url" });
  // Its URL as rendered (a template's was judged only in part when declared).
  const protocol = URL.canParse(url) ? new URL(url).protocol : undefined;
  if (protocol !== "http:" && protocol !== "https:")
    return { ok: false, error: `${http.method} ${url} refused: not an http or https URL` };
  const headers = Object.fromEntries(
    Object.entries(http.headers).map(([k, v]) => [
      k,
      renderTemplateWith(v, variables, `alerts.http.headers.${k}`),
    ]),
  );
  const body =
    http.body === undefined ? undefined : renderTemplateWith(http.body, variables, "alerts.http.body");
  const res = await fetch(url, {
    method: http.method,
    headers,
    ...(http.method === "GET"
      ? {}
      : { body: body ?? JSON.stringify((variables as unknown as { alert: unknown }).alert) }),
    signal: AbortSignal.timeout(sink.timeoutMs),
  });
  const text = (await res.text()).slice(0, BODY_LIMIT);
  return res.ok
    ? { ok: true }
    : { ok: false, error: `${http.method} ${url} returned HTTP ${res.status}: ${text}` };
}

function runCommand(
  command: string,
  timeoutMs: number,
  variables: TemplateVariables,
  sandbox: AlertCommandSandbox | undefined,
): Promise<{ ok: true } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    const child = spawn("/bin/sh", ["-c", command], {
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
      ...(sandbox?.uid !== undefined && sandbox.gid !== undefined
        ? { uid: sandbox.uid, gid: sandbox.gid }
        : {}),
      ...(sandbox?.cwd !== undefined ? { cwd: sandbox.cwd } : {}),
      env: { ...(sandbox ? sandbox.env() : process.env), ...alertEnvironment(variables) },
    });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      if (stderr.length < BODY_LIMIT) stderr += d.toString();
    });
    const timer = setTimeout(() => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ ok: false, error: `could not start the command: ${e.message}` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ ok: true });
      else
        resolve({
          ok: false,
          error: `${signal ? `killed by ${signal}${signal === "SIGKILL" ? ` (timed out after ${timeoutMs} ms)` : ""}` : `exited with code ${code}`}${stderr.trim() ? `: ${stderr.trim().split("\n").at(-1)}` : ""}`,
        });
    });
  });
}
