import type { RunCommand } from "@chronolog/worker";
import type { Dispatcher, ReportListener } from "../dispatcher.js";

/**
 * Attempts by their queue: one with none goes to the local pool exactly as before, one with a
 * queue to the remote workers serving it. Questions (who knows these tokens?) go to both, and
 * so do cancels and start permissions (the one that does not hold the token ignores them).
 */
export class RoutingDispatcher implements Dispatcher {
  constructor(
    private readonly local: Dispatcher,
    private readonly remote: Dispatcher,
  ) {}

  dispatch(commands: readonly RunCommand[]): void {
    const remote = commands.filter((c) => c.queue !== undefined);
    if (remote.length === 0) {
      this.local.dispatch(commands);
      return;
    }
    if (remote.length < commands.length) this.local.dispatch(commands.filter((c) => c.queue === undefined));
    this.remote.dispatch(remote);
  }

  onReport(listener: ReportListener): (() => void) | undefined {
    const a = this.local.onReport(listener);
    const b = this.remote.onReport(listener);
    return () => {
      a?.();
      b?.();
    };
  }

  async query(tokens: readonly string[], timeoutMs?: number): Promise<Map<string, string>> {
    const [a, b] = await Promise.all([
      this.local.query(tokens, timeoutMs),
      this.remote.query(tokens, timeoutMs),
    ]);
    for (const [t, w] of b) a.set(t, w);
    return a;
  }

  cancel(token: string, reason: string): boolean {
    const a = this.local.cancel(token, reason) === true;
    const b = this.remote.cancel(token, reason) === true;
    return a || b;
  }

  proceed(token: string): boolean {
    const a = this.local.proceed(token) === true;
    return this.remote.proceed(token) === true || a;
  }

  killAll(reason: string): number {
    return (this.local.killAll?.(reason) ?? 0) + (this.remote.killAll?.(reason) ?? 0);
  }
}
