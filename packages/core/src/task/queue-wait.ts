/** How a worker queue stands: the workers connected that serve it, and their slots. */
export interface QueueRoom {
  /** Workers connected that serve the queue. */
  readonly connected: number;
  /** Attempts given to them and not yet finished. */
  readonly busy: number;
  /** Their capacities, summed. */
  readonly slots: number;
}

/** Whether an attempt of the queue can be given to a worker now. */
export function queueHasRoom(room: QueueRoom): boolean {
  return room.connected > 0 && room.busy < room.slots;
}

/**
 * One sentence for a task held for a worker of its queue: `waiting for a worker on queue gpu
 * (0 connected)` or `(2 connected, 16 of 16 slots busy)`. The scheduler's hold and `why` both
 * say it so.
 */
export function queueWaitReason(queue: string, room: QueueRoom): string {
  if (room.connected === 0) return `waiting for a worker on queue ${queue} (0 connected)`;
  return `waiting for a worker on queue ${queue} (${room.connected} connected, ${room.busy} of ${room.slots} slots busy)`;
}
