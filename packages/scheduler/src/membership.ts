/**
 * Several schedulers sharing the work. Tasks fall into a fixed number of shards; a
 * membership (for Kafka: a consumer group, see @chronolog/log-kafka) assigns each shard to one
 * live scheduler. A scheduler decides and dispatches only for the tasks of its shards, and
 * reconciles only their instances, but it follows the whole log: the gate sees every parent,
 * whichever scheduler runs it, and a shard that moves needs no state rebuilt.
 *
 * Ownership is an optimisation of who works, never what keeps work single: every decision is
 * still a compare-and-set on the stream it decides for, so two schedulers that both believe
 * they own a shard (during a rebalance, or a paused former owner) cannot both dispatch one
 * attempt.
 *
 * What the compare-and-set cannot guard is what already runs: an attempt on a worker of a
 * scheduler the group dropped is taken for lost by the others, and may be run again. So a
 * membership whose member can be dropped without hearing of it (cut off from the group) fences
 * it first: from the moment the group may be about to drop it, it holds nothing, and the
 * scheduler kills what its workers run and hands nothing more to them until the fence lifts.
 */
export interface Membership {
  /** This scheduler's id; its workers' ids start with it. */
  readonly id: string;
  /** How many shards the tasks fall into. */
  readonly shards: number;
  /** Whether this scheduler holds `shard` now. */
  holds(shard: number): boolean;
  /** Whether the scheduler with this id is a live member (false once its session expired). */
  isAlive(schedulerId: string): boolean;
  /**
   * Whether this member is fenced: it could not renew its membership for so long that the group
   * may drop it (and hand its shards to the others) without its hearing of it. While fenced it
   * holds no shard. Memberships whose members cannot be dropped unawares leave it out.
   */
  fenced?(): boolean;
  /** Called whenever the shards held here change, a fence included. Returns an unsubscribe function. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

/** FNV-1a, 32 bits: a stable hash of a shard key, the same in every process and version. */
export function shardOf(key: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

/**
 * What a task's shard is decided by: its workflow when it has one (a run's tasks, its
 * concurrency limits and its failure policy stay with one scheduler), else the task itself.
 */
export function shardKeyOf(task: {
  readonly id: string;
  readonly spec: { readonly workflow?: string };
}): string {
  return task.spec.workflow ? `workflow:${task.spec.workflow}` : `task:${task.id}`;
}

/** The scheduler a worker id belongs to: worker ids are `<scheduler id>-<n>`. */
export function schedulerOfWorker(workerId: string): string {
  const dash = workerId.lastIndexOf("-");
  return dash > 0 ? workerId.slice(0, dash) : workerId;
}
