import { REMOTE_PROTOCOL_VERSION, type RegisterRequest } from "@chronolog/worker";

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

/**
 * A registration checked: its protocol, its id and the queues its token may serve (`queues`
 * null: any). Returns its queues without repeats; throws the refusal otherwise.
 */
export function checkRegistration(
  req: RegisterRequest,
  caller: { readonly tokenName: string | undefined; readonly queues: readonly string[] | null },
): string[] {
  if (req.protocol !== REMOTE_PROTOCOL_VERSION)
    throw new RemoteRefusal(
      400,
      "protocol_version",
      `this scheduler speaks worker protocol ${REMOTE_PROTOCOL_VERSION}, the worker speaks ${req.protocol}: run a worker of the scheduler's version`,
      { protocol: REMOTE_PROTOCOL_VERSION },
    );
  if (!WORKER_ID.test(req.id) || isLocalWorkerId(req.id))
    throw new RemoteRefusal(
      400,
      "validation",
      `worker id ${JSON.stringify(req.id.slice(0, 140))} is not one a remote worker may take: letters, digits, _, ., : and -, at most 128, and not of the form the scheduler gives its own workers (w<pid>-<n>)`,
    );
  const queues = [...new Set(req.queues)];
  if (caller.queues !== null) {
    const outside = queues.filter((q) => !caller.queues?.includes(q));
    if (outside.length > 0)
      throw new RemoteRefusal(
        403,
        "forbidden",
        `token ${caller.tokenName} may serve ${caller.queues.length === 1 ? "queue" : "queues"} ${caller.queues.join(", ")}: not ${outside.join(", ")}`,
        { queues: caller.queues, outside },
      );
  }
  return queues;
}
