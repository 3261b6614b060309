import { afterWait } from "@chronolog/worker";
import type { RemoteConnection } from "./connection.js";

interface PendingQuestion {
  readonly waiting: Set<string>;
  readonly found: Map<string, string>;
  finish(): void;
}

/**
 * The questions put to the connected workers (who knows these attempts?), each waiting for the
 * answers of the workers asked, or for its time to run out.
 */
export class Questions {
  private readonly pending = new Map<string, PendingQuestion>();
  private seq = 0;

  /**
   * Asks `workers` (by `send`: the request id to put in the question); resolves with `found`
   * and what they answered once all answered or `timeoutMs` passed.
   */
  ask(
    workers: readonly RemoteConnection[],
    found: Map<string, string>,
    timeoutMs: number,
    send: (conn: RemoteConnection, requestId: string) => void,
  ): Promise<Map<string, string>> {
    const requestId = `r${++this.seq}`;
    return new Promise((resolve) => {
      // (Its time is out once what came in meanwhile is read, an answer among them: see afterWait.)
      const cancelWait = afterWait(timeoutMs, () => pending.finish());
      const pending: PendingQuestion = {
        waiting: new Set(workers.map((c) => c.id)),
        found,
        finish: () => {
          cancelWait();
          this.pending.delete(requestId);
          resolve(found);
        },
      };
      this.pending.set(requestId, pending);
      for (const c of workers) send(c, requestId);
    });
  }

  /** The worker's answer: its word counts only for attempts given to it (no other worker's, no other queue's). */
  answer(conn: RemoteConnection, requestId: string, running: readonly string[]): void {
    const q = this.pending.get(requestId);
    if (!q) return;
    for (const t of running) if (conn.given.has(t)) q.found.set(t, conn.id);
    this.answered(q, conn.id);
  }

  /** A worker gone answers nothing: no question waits for it. */
  gone(id: string): void {
    for (const q of [...this.pending.values()]) if (q.waiting.has(id)) this.answered(q, id);
  }

  private answered(q: PendingQuestion, id: string): void {
    q.waiting.delete(id);
    if (q.waiting.size === 0) q.finish();
  }
}
