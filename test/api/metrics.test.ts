import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import { type ApiProcess, dataDir, dayAt, declareFile, Leftovers, startApi } from "./support.js";

/**
 * `/metrics` of a `chronolog up`, scraped: the process's and the runtime's metrics under the
 * names dashboards and alerts know, Chronolog's own as they were, and nothing Prometheus' own
 * linter flags (checked with promtool where it is installed).
 */

/** Chronolog's own metrics, by name and type: renaming one breaks its users' dashboards. */
const CHRONOLOG_METRICS = {
  chronolog_api_as_of_builds: "gauge",
  chronolog_api_requests_total: "counter",
  chronolog_api_sse_clients: "gauge",
  chronolog_api_sse_dropped_total: "counter",
  chronolog_api_streams_open: "gauge",
  chronolog_api_waiters: "gauge",
  chronolog_completions_total: "counter",
  chronolog_connection_slots_in_use: "gauge",
  chronolog_connection_slots_limit: "gauge",
  chronolog_dispatches_total: "counter",
  chronolog_failures_total: "counter",
  chronolog_log_append_seconds: "histogram",
  chronolog_log_head_position: "gauge",
  chronolog_parent_success_to_dispatch_seconds: "histogram",
  chronolog_reconcile_pass_seconds: "histogram",
  chronolog_runs: "gauge",
  chronolog_tasks: "gauge",
  chronolog_worker_reports_refused_total: "counter",
};

const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" });
const PROMTOOL = promtool.error === undefined && promtool.status === 0;
const NO_PROMTOOL = "promtool is not installed (Debian's package prometheus ships it)";
if (!PROMTOOL) console.warn(`test/api/metrics.test.ts: skipping the promtool check: ${NO_PROMTOOL}`);

const left = new Leftovers();
let server: ApiProcess;
let text: string;
/** Each metric family's type, by name, from its `# TYPE` line. */
let types: Map<string, string>;

beforeAll(async () => {
  const dir = dataDir(left, "metrics");
  declareFile(
    dir,
    [
      "tasks:",
      `  - { project: ops, account: acme, name: tick, cron: "0 0 * * *", startDate: "${dayAt(-1)}", endDate: "${dayAt(0)}", idempotent: true, operator: { type: noop } }`,
      `  - { project: ops, account: acme, name: tock, cron: "0 0 * * *", startDate: "${dayAt(-1)}", endDate: "${dayAt(0)}", idempotent: true, operator: { type: noop }, parents: [ops/acme/tick] }`,
      "",
    ].join("\n"),
  );
  server = await startApi(left, dir, ["up", "--workers", "1", "--reconcile-ms", "200"]);
  // Scraped once a dispatch was counted: every family then has a sample.
  text = await waitUntil("a dispatch counted", async () => {
    const scraped = await (await fetch(`${server.url}/metrics`)).text();
    return /^chronolog_dispatches_total\{[^}]*\} [1-9]/m.test(scraped) ? scraped : undefined;
  });
  types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]));
});
afterAll(() => left.clear());

describe("/metrics", () => {
  it("serves the process's and the runtime's metrics under their standard names", () => {
    expect(types.get("process_cpu_seconds_total")).toBe("counter");
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(types.get("process_resident_memory_bytes")).toBe("gauge");
    expect(types.get("nodejs_eventloop_lag_seconds")).toBe("gauge");
    expect(types.get("nodejs_heap_size_used_bytes")).toBe("gauge");
    expect(types.get("nodejs_gc_duration_seconds")).toBe("histogram");
    expect(types.get("nodejs_active_handles")).toBe("gauge");
    expect(types.get("nodejs_active_handles_all")).toBe("gauge");
    expect([...types.keys()].filter((n) => /^chronolog_(process|nodejs)_/.test(n))).toEqual([]);
  });

  it("keeps Chronolog's own metrics as they were", () => {
    const own = Object.fromEntries([...types].filter(([name]) => name.startsWith("chronolog_")).sort());
    expect(own).toEqual(CHRONOLOG_METRICS);
    expect(text).toMatch(/^chronolog_tasks\{condition="[a-z_]+"\} [12]$/m);
  });

  it("counts each dispatch and outcome by operator, and times a child's dispatch after its parent", async () => {
    // One interval each: the parent's, then the child's once the parent has succeeded.
    const done = await waitUntil("both intervals counted", async () => {
      const scraped = await (await fetch(`${server.url}/metrics`)).text();
      return /^chronolog_completions_total\{operator="noop"\} 2$/m.test(scraped) ? scraped : undefined;
    });
    expect(done).toMatch(/^chronolog_dispatches_total\{operator="noop"\} 2$/m);
    expect(done).not.toMatch(/^chronolog_failures_total\{/m);
    expect(done).toMatch(/^chronolog_parent_success_to_dispatch_seconds_count 1$/m);
  });

  it("names only counters _total", () => {
    const wrong = [...types].filter(([name, type]) => name.endsWith("_total") !== (type === "counter"));
    expect(wrong).toEqual([]);
  });

  it.skipIf(!PROMTOOL)(
    `promtool check metrics finds nothing${PROMTOOL ? "" : ` (skipped: ${NO_PROMTOOL})`}`,
    () => {
      const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
      expect(`${r.stdout}${r.stderr}`).toBe("");
      expect(r.status).toBe(0);
    },
  );
});
