/** A remote worker's request refused: the HTTP API answers it with this status and problem kind. */
export class RemoteRefusal extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "RemoteRefusal";
  }
}

/**
 * Whether a worker id is one the scheduler gives its own worker processes (`w<pid>-<n>`, or
 * `<member id>-<n>` on a Kafka log): a remote worker may not take such an id, and an attempt
 * on one belongs to a local pool, which dies with its scheduler process.
 */
export function isLocalWorkerId(id: string): boolean {
  return /^(w\d+|s\d+\.[0-9a-f]+)-\d+$/.test(id);
}

/** A worker id a remote worker may take: letters, digits, `_ . : -`, at most 128. */
export const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
