import { counted } from "../words.js";

/** How loaded the workers serving one queue are, as the workers projection counts it. */
export interface QueueLoad {
  /** Workers connected now that serve the queue. */
  readonly connected: number;
  /** Attempts of the queue's tasks in flight on those workers. */
  readonly busy: number;
  /** The sum of the capacities of those workers. */
  readonly slots: number;
}

/**
 * Why a due task whose gate is open does not run: its attempts go only to workers serving its
 * queue, and none is connected (`waiting for a worker on queue gpu (0 connected)`) or they are
 * busy (`waiting for a worker on queue gpu (2 connected, 16 of 16 slots busy)`). One text for
 * `why`, `task`, the API and the scheduler's own logs.
 */
export function queueWaitReason(queue: string, load: QueueLoad): string {
  const head = `waiting for a worker on queue ${queue}`;
  if (load.connected <= 0) return `${head} (0 connected)`;
  return `${head} (${load.connected} connected, ${load.busy} of ${counted(load.slots, "slot")} busy)`;
}
