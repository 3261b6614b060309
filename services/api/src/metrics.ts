import { formatTaskKey, projectedSlots, taskKeyText } from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import { renderProblem, taskRow } from "@chronolog/scheduler";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Gate, StreamRegistry } from "./guard.js";
import { collectRuntimeMetrics } from "./runtime-metrics.js";
import type { ApiState } from "./state.js";

/** What the scheduler process reports beyond the log (absent under `chronolog serve`). */
export interface SchedulerHooks {
  /** Hears each append the process makes: its duration in milliseconds. */
  onAppend(listener: (ms: number) => void): () => void;
  /** Hears each reconcile pass: its duration in milliseconds. */
  onReconcilePass(listener: (ms: number) => void): () => void;
}

/**
 * Two times (ms) for each task id: when it was last dispatched (0 until it is) and when its
 * latest interval completed (NaN until one does: no comparison holds). A task is a row: one
 * entry in a map from its id to its row (a small integer, held in the entry) and two doubles in
 * arrays, where two maps of numbers held two entries and two boxed numbers a task.
 */
class TaskTimes {
  private readonly rows = new Map<string, number>();
  private dispatchedMs = new Float64Array(1024);
  private completedMs = new Float64Array(1024);

  dispatchedAt(id: string): number {
    const row = this.rows.get(id);
    return row === undefined ? 0 : (this.dispatchedMs[row] as number);
  }

  completedAt(id: string): number | undefined {
    const row = this.rows.get(id);
    return row === undefined ? undefined : (this.completedMs[row] as number);
  }

  dispatched(id: string, at: number): void {
    this.dispatchedMs[this.rowOf(id)] = at;
  }

  completed(id: string, at: number): void {
    this.completedMs[this.rowOf(id)] = at;
  }

  private rowOf(id: string): number {
    const known = this.rows.get(id);
    if (known !== undefined) return known;
    const row = this.rows.size;
    if (row === this.dispatchedMs.length) {
      const dispatched = new Float64Array(row * 2);
      dispatched.set(this.dispatchedMs);
      this.dispatchedMs = dispatched;
      const completed = new Float64Array(row * 2);
      completed.set(this.completedMs);
      this.completedMs = completed;
    }
    this.dispatchedMs[row] = 0;
    this.completedMs[row] = Number.NaN;
    this.rows.set(id, row);
    return row;
  }
}

/**
 * The Prometheus metrics: counters folded from the log as the API follows it, gauges read
 * from the projection when scraped, and the process's own (under their standard names). Labels are bounded: an operator, a
 * condition, a connection, a state, a route; never an interval, an attempt or a token.
 */
export class ApiMetrics {
  readonly registry = new Registry();
  /**
   * Attempts dispatched, succeeded and failed, by operator type: counted here as the log is
   * followed and handed to their counters when scraped (a counter's own `inc` hashes its labels
   * at each call, several for every completed interval of a busy scheduler).
   */
  private readonly counts = {
    dispatches: new Map<string, number>(),
    completions: new Map<string, number>(),
    failures: new Map<string, number>(),
  };
  private readonly parentToDispatch: Histogram;
  private readonly requests: Counter;
  private readonly sse: Gauge;
  private readonly sseDrops: Counter;
  private readonly refusedReports: Counter;
  /** token -> operator type, while the attempt is in flight. */
  private readonly operatorOf = new Map<string, string>();
  /** Per task id: when it was last dispatched and when its latest interval completed (ms). */
  private readonly times = new TaskTimes();
  private readonly stops: Array<() => void> = [];

  constructor(state: ApiState, hooks?: SchedulerHooks) {
    const registers = [this.registry];
    collectRuntimeMetrics(this.registry);
    const byOperator = (name: string, help: string, counts: Map<string, number>) =>
      new Counter({
        name,
        help,
        labelNames: ["operator"],
        registers,
        collect() {
          this.reset();
          for (const [operator, n] of counts) this.inc({ operator }, n);
        },
      });
    byOperator(
      "chronolog_dispatches_total",
      "Attempts dispatched (intent written), by operator type",
      this.counts.dispatches,
    );
    byOperator(
      "chronolog_completions_total",
      "Attempts that succeeded, by operator type",
      this.counts.completions,
    );
    byOperator("chronolog_failures_total", "Attempts that failed, by operator type", this.counts.failures);
    this.parentToDispatch = new Histogram({
      name: "chronolog_parent_success_to_dispatch_seconds",
      help: "From the last parent's success to the child's dispatch",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.requests = new Counter({
      name: "chronolog_api_requests_total",
      help: "HTTP API requests, by method, route and status",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.sse = new Gauge({
      name: "chronolog_api_sse_clients",
      help: "Live event clients connected",
      registers,
    });
    this.sseDrops = new Counter({
      name: "chronolog_api_sse_dropped_total",
      help: "Live event clients dropped for falling too far behind",
      registers,
    });
    this.refusedReports = new Counter({
      name: "chronolog_worker_reports_refused_total",
      help: "Remote workers' reports refused, by how the log keeps them: each (one WorkerReportRefused each) or counted (past the budget, in a WorkerReportRefusalsCounted)",
      labelNames: ["recorded"],
      registers,
    });
    const { projection } = state;
    new Gauge({
      name: "chronolog_tasks",
      help: "Declared tasks, by where each stands now",
      labelNames: ["condition"],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        const options = { slots: projectedSlots(projection), renderProblem: renderProblem(projection) };
        for (const t of projection.tasks.values())
          this.inc({ condition: taskRow(projection, t, now, options).condition });
      },
    });
    new Gauge({
      name: "chronolog_runs",
      help: "Workflow runs the projection holds, by state",
      labelNames: ["state"],
      registers,
      collect() {
        this.reset();
        for (const r of projection.runs.values()) this.inc({ state: r.status });
      },
    });
    new Gauge({
      name: "chronolog_connection_slots_in_use",
      help: "Attempts queued or running on a connection",
      labelNames: ["connection"],
      registers,
      collect() {
        this.reset();
        const slots = projectedSlots(projection);
        for (const name of projection.connections.keys())
          this.set({ connection: name }, slots.connectionInUse(name));
      },
    });
    new Gauge({
      name: "chronolog_connection_slots_limit",
      help: "A connection's maxParallelism",
      labelNames: ["connection"],
      registers,
      collect() {
        this.reset();
        for (const c of projection.connections.values()) this.set({ connection: c.name }, c.maxParallelism);
      },
    });
    new Gauge({
      name: "chronolog_api_waiters",
      help: "Requests waiting for the next event (long polls, idle live streams)",
      registers,
      collect() {
        this.set(state.waiting);
      },
    });
    new Gauge({
      name: "chronolog_log_head_position",
      help: "The position of the last event the API has applied",
      registers,
      collect() {
        this.set(Number(state.head.position));
      },
    });
    if (hooks) {
      const appends = new Histogram({
        name: "chronolog_log_append_seconds",
        help: "Appends to the log made by this process",
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
        registers,
      });
      const passes = new Histogram({
        name: "chronolog_reconcile_pass_seconds",
        help: "Reconcile passes of this process",
        buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
        registers,
      });
      this.stops.push(hooks.onAppend((ms) => appends.observe(ms / 1000)));
      this.stops.push(hooks.onReconcilePass((ms) => passes.observe(ms / 1000)));
    }
    this.stops.push(state.onEvent((e) => this.fold(e, state)));
  }

  private fold(e: RecordedEvent, state: ApiState): void {
    switch (e.type) {
      case "DispatchIntended": {
        const operator = String(e.data.operator.type ?? "unknown");
        this.operatorOf.set(e.data.token, operator);
        count(this.counts.dispatches, operator);
        // The event's key is its own object, read from the log: the task's id is looked up by
        // its text, and the task's own id string is what the map keeps.
        const task = state.projection.tasks.get(taskKeyText(e.data.key));
        if (!task) break;
        let last = Number.NEGATIVE_INFINITY;
        for (const p of task.parents) {
          const at = this.times.completedAt(formatTaskKey(p));
          if (at !== undefined && at > last) last = at;
        }
        const at = this.timeOf(e.metadata.recordedAt);
        // Counted when a parent's success is what the dispatch followed (not a retry, not a timer).
        if (Number.isFinite(last) && last > this.times.dispatchedAt(task.id))
          this.parentToDispatch.observe(Math.max(0, at - last) / 1000);
        this.times.dispatched(task.id, at);
        break;
      }
      case "AttemptSucceeded":
      case "AttemptFailed": {
        const operator = this.operatorOf.get(e.data.token) ?? "unknown";
        this.operatorOf.delete(e.data.token);
        count(e.type === "AttemptSucceeded" ? this.counts.completions : this.counts.failures, operator);
        break;
      }
      case "AttemptAbandoned":
      case "AttemptCancelled":
        this.operatorOf.delete(e.data.token);
        break;
      case "WorkerReportRefused":
        this.refusedReports.inc({ recorded: "each" });
        break;
      case "WorkerReportRefusalsCounted":
        this.refusedReports.inc({ recorded: "counted" }, e.data.count);
        break;
      case "IntervalCompleted": {
        const task = state.projection.tasks.get(taskKeyText(e.data.key));
        if (task) this.times.completed(task.id, this.timeOf(e.metadata.recordedAt));
        break;
      }
      default:
        break;
    }
  }

  /** The last recording time read, and its milliseconds: the events of one commit share it. */
  private lastRecordedAt = "";
  private lastAt = Number.NaN;

  private timeOf(recordedAt: string): number {
    if (recordedAt !== this.lastRecordedAt) {
      this.lastAt = Date.parse(recordedAt);
      this.lastRecordedAt = recordedAt;
    }
    return this.lastAt;
  }

  request(method: string, route: string, status: number): void {
    this.requests.inc({ method, route, status: String(status) });
  }

  /** Gauges of the open streams and of the views being folded as of a position. */
  watch(streams: StreamRegistry, asOf: Gate): void {
    const registers = [this.registry];
    new Gauge({
      name: "chronolog_api_streams_open",
      help: "Live streams open (events and followed outputs), against their cap",
      labelNames: ["kind"],
      registers,
      collect() {
        this.set({ kind: "open" }, streams.count);
        this.set({ kind: "limit" }, streams.limits.total);
      },
    });
    new Gauge({
      name: "chronolog_api_as_of_builds",
      help: "Views as of a position being folded, and waiting for their turn",
      labelNames: ["state"],
      registers,
      collect() {
        this.set({ state: "running" }, asOf.active);
        this.set({ state: "waiting" }, asOf.pending);
      },
    });
  }

  sseClients(delta: number): void {
    this.sse.inc(delta);
  }

  sseDropped(): void {
    this.sseDrops.inc();
  }

  close(): void {
    for (const s of this.stops) s();
  }
}

function count(counts: Map<string, number>, operator: string): void {
  counts.set(operator, (counts.get(operator) ?? 0) + 1);
}
