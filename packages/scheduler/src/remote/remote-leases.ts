import type { SchedulerProjection } from "@chronolog/core";
import type { RunCommand } from "@chronolog/worker";
import type { LeaseBook } from "../reconcile/lease-book.js";
import type { RemoteConnection } from "./connection.js";

/**
 * The leases of the attempts remote workers hold, kept in step with the workers' fences. A
 * remote worker fences its idempotent attempts (kills them) two thirds of a lease after it sent
 * the last request the scheduler answered; the scheduler hears that request after it was sent.
 * So whenever a worker is heard on its session, the attempts it holds are leased from then: a
 * lease runs out here only a third of it after the worker stopped its attempt, whatever its
 * requests carried (a heartbeat of another attempt, an answer, an upload) and however long the
 * answer took. An attempt is leased from when it is given or adopted, and renewed by each report
 * of it; one the worker has not spoken of for a whole lease (it reports it to another scheduler
 * now, or lost it) is no longer renewed by its other requests: its lease runs out, and the
 * reconcile loop asks the workers about it.
 */
export class RemoteLeases {
  constructor(
    /** The scheduler's leases (the reconcile loop reads them); none: nothing is leased here. */
    private readonly leases: LeaseBook | undefined,
    private readonly projection: SchedulerProjection,
    private readonly now: () => number,
  ) {}

  /** `conn` was heard from now. */
  heard(conn: RemoteConnection): void {
    const now = this.now();
    conn.lastHeard = now;
    if (!this.leases) return;
    for (const [t, cmd] of conn.given) {
      const ms = this.leaseMs(t, cmd);
      if (ms !== undefined && now - (conn.spokenOf.get(t) ?? 0) <= ms) this.leases.extend(t, now + ms);
    }
  }

  /** `conn` holds attempt `token` from now (given, or adopted: `cmd` null). */
  took(conn: RemoteConnection, token: string, cmd: RunCommand | null): void {
    conn.spokenOf.set(token, this.now());
    this.renew(token, cmd);
  }

  /** A report of `token` came from `conn` (heard before its batch was read: see heard). */
  spokeOf(conn: RemoteConnection, token: string): void {
    conn.spokenOf.set(token, this.now());
    this.renew(token, conn.given.get(token) ?? null);
  }

  /** The lease of attempt `token` runs from now. */
  renew(token: string, cmd: RunCommand | null = null): void {
    if (!this.leases) return;
    const ms = this.leaseMs(token, cmd);
    if (ms !== undefined) this.leases.extend(token, this.now() + ms);
  }

  /** An attempt's lease in ms: its command's, or its instance's (one adopted). */
  private leaseMs(token: string, cmd: RunCommand | null): number | undefined {
    if (cmd) return cmd.leaseSeconds * 1000;
    const stream = this.projection.workers.attempt(token)?.stream;
    const seconds = stream === undefined ? undefined : this.projection.instances.get(stream)?.leaseSeconds;
    return seconds === undefined ? undefined : seconds * 1000;
  }
}
