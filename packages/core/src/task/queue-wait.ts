import { counted } from "../words.js";

/** How a worker queue stands: the workers connected that serve it, and their slots. */
export interface QueueRoom {
  /** Workers connected now that serve the queue. */
  readonly connected: number;
  /** Attempts of the queue's tasks given to those workers and not yet finished. */
  readonly busy: number;
  /** The sum of the capacities of those workers. */
  readonly slots: number;
}

/** The same, as the workers projection counts it from the log. */
export type QueueLoad = QueueRoom;

/** Whether an attempt of the queue can be given to a worker now. */
export function queueHasRoom(room: QueueRoom): boolean {
  return room.connected > 0 && room.busy < room.slots;
}

/**
 * Why a due task whose gate is open does not run: its attempts go only to workers serving its
 * queue, and none is connected (`waiting for a worker on queue gpu (0 connected)`) or they are
 * busy (`waiting for a worker on queue gpu (2 connected, 16 of 16 slots busy)`). One text for
 * the scheduler's hold, `why`, `task` and the API.
 */
export function queueWaitReason(queue: string, room: QueueRoom): string {
  return `waiting for a worker on queue ${queue} ${queueRoomText(room)}`;
}

/** A ready task of a queue: where its attempt goes (`goes to a worker on queue gpu (1 connected, 0 of 16 slots busy)`). */
export function queueReadyReason(queue: string, room: QueueRoom): string {
  return `goes to a worker on queue ${queue} ${queueRoomText(room)}`;
}

/** `(0 connected)`, `(2 connected, 16 of 16 slots busy)`. */
function queueRoomText(room: QueueRoom): string {
  if (room.connected <= 0) return "(0 connected)";
  return `(${room.connected} connected, ${room.busy} of ${counted(room.slots, "slot")} busy)`;
}
