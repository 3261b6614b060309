import { collectDefaultMetrics, Gauge, type Registry } from "prom-client";

/**
 * prom-client's gauges whose names end in `_total`, which Prometheus keeps for counters
 * (`promtool check metrics` flags them), and the names they are served under. Each is the sum
 * of the gauge of the same stem labelled by `type` (`nodejs_active_handles{type=...}`), which
 * keeps its name.
 */
export const RENAMED_RUNTIME_GAUGES: Readonly<Record<string, { name: string; help: string }>> = {
  nodejs_active_handles_total: {
    name: "nodejs_active_handles_all",
    help: "Active libuv handles, of every type (prom-client's nodejs_active_handles_total)",
  },
  nodejs_active_requests_total: {
    name: "nodejs_active_requests_all",
    help: "Active libuv requests, of every type (prom-client's nodejs_active_requests_total)",
  },
  nodejs_active_resources_total: {
    name: "nodejs_active_resources_all",
    help: "Resources keeping the event loop alive, of every type (prom-client's nodejs_active_resources_total)",
  },
};

/**
 * The process's and the runtime's metrics under their standard names (`process_*`,
 * `nodejs_*`: those dashboards and alerts look for), unprefixed, save the gauges above.
 */
export function collectRuntimeMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const [from, to] of Object.entries(RENAMED_RUNTIME_GAUGES)) {
    const original = registry.getSingleMetric(from);
    // Absent on a runtime that lacks what it reads.
    if (!original) continue;
    registry.removeSingleMetric(from);
    new Gauge({
      ...to,
      registers: [registry],
      async collect() {
        const { values } = await original.get();
        this.set(values[0]?.value ?? 0);
      },
    });
  }
}
