/**
 * Worker leases, in memory. Heartbeats extend a lease here and are never written to the log
 * one by one. After a restart the book is empty: every running attempt then gets a fresh grace
 * period (its lease length from now) rather than being failed for the silence of the restart.
 */
export class LeaseBook {
  private readonly deadlines = new Map<string, number>();

  /** The lease of `token` ends at `deadline` unless extended. */
  extend(token: string, deadline: number): void {
    const current = this.deadlines.get(token);
    if (current === undefined || deadline > current) this.deadlines.set(token, deadline);
  }

  /** The deadline, starting a fresh grace period for an attempt this process never saw. */
  deadline(token: string, now: number, leaseSeconds: number): number {
    let d = this.deadlines.get(token);
    if (d === undefined) {
      d = now + leaseSeconds * 1000;
      this.deadlines.set(token, d);
    }
    return d;
  }

  /** The deadline if this process has one for `token`, without starting a grace period. */
  peek(token: string): number | undefined {
    return this.deadlines.get(token);
  }

  forget(token: string): void {
    this.deadlines.delete(token);
  }

  /** Drops leases of attempts no longer queued or running. */
  retain(running: ReadonlySet<string>): void {
    for (const token of this.deadlines.keys()) if (!running.has(token)) this.deadlines.delete(token);
  }

  get size(): number {
    return this.deadlines.size;
  }
}
