import {
  DEFAULT_REFUSAL_BUDGET,
  decideRefusals,
  type RefusalBudget,
  type RefusalCount,
  type RefusalWindow,
  settleRefusals,
  workerStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import type { RefusedReport, WorkerReport } from "@chronolog/worker";
import type { SchedulerLogger } from "../scheduler-types.js";

/**
 * Workers' refused reports on record, within a budget (see decideRefusals): the first of each
 * window one by one, the rest counted, the count recorded once. Every report is refused all the
 * same, and the worker's answer lists each; only what the log keeps is bounded.
 */
export class RefusalRecord {
  private readonly windows = new Map<string, RefusalWindow>();

  constructor(
    private readonly log: EventLog,
    private readonly logger: SchedulerLogger,
    private readonly now: () => number,
    private readonly budget: RefusalBudget = DEFAULT_REFUSAL_BUDGET,
  ) {}

  /** Worker `worker`'s reports `refused` of the batch `messages`. */
  async refused(
    worker: string,
    messages: readonly WorkerReport[],
    refused: readonly RefusedReport[],
  ): Promise<void> {
    const now = this.now();
    const last = refused.at(-1);
    if (!last) return;
    const d = decideRefusals(this.windows.get(worker), refused.length, last.reason, now, this.budget);
    this.windows.set(worker, d.window);
    if (d.record > 0)
      this.logger.warn({ worker, refused: refused.length }, "refused a remote worker's reports");
    const events = [
      ...(d.count ? [countEvent(worker, d.count)] : []),
      ...refusedEvents(worker, messages, refused.slice(0, d.record)),
    ];
    if (events.length > 0) await this.log.append(workerStream(worker), events, { expectedRevision: "any" });
  }

  /**
   * Records the counts of the windows ended by now, or of `worker`'s now (it goes: its window
   * goes on, a new connection gets no new budget).
   */
  async settle(worker?: string): Promise<void> {
    const now = this.now();
    const ids = worker !== undefined ? [worker] : [...this.windows.keys()];
    for (const id of ids) {
      const w = this.windows.get(id);
      if (!w) continue;
      if (worker === undefined && now - w.since < this.budget.windowMs) continue;
      const s = settleRefusals(w, now, this.budget);
      if (s.window) this.windows.set(id, s.window);
      else this.windows.delete(id);
      if (!s.count) continue;
      try {
        await this.log.append(workerStream(id), [countEvent(id, s.count)], { expectedRevision: "any" });
      } catch (error) {
        this.logger.error({ err: error, worker: id }, "could not record a count of refused reports");
      }
    }
  }
}

function countEvent(worker: string, c: RefusalCount) {
  return {
    type: "WorkerReportRefusalsCounted" as const,
    data: {
      worker,
      count: c.count,
      from: new Date(c.since).toISOString(),
      until: new Date(c.until).toISOString(),
      reason: c.reason.slice(0, 2000),
    },
  };
}

function refusedEvents(worker: string, messages: readonly WorkerReport[], refused: readonly RefusedReport[]) {
  if (refused.length === 0) return [];
  const streams = new Map<string, string>();
  for (const m of messages) if ("instanceStream" in m) streams.set(m.token, m.instanceStream);
  return refused.map((r) => {
    const stream = streams.get(r.token);
    return {
      type: "WorkerReportRefused" as const,
      data: {
        worker,
        kind: r.kind.slice(0, 32),
        token: r.token.slice(0, 256),
        ...(stream ? { instanceStream: stream.slice(0, 1024) } : {}),
        reason: r.reason.slice(0, 2000),
      },
    };
  });
}
