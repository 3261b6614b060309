/**
 * Tasks with a write under way, and the log position each write must reach in the projection
 * before the task is decided again (so that it is never decided on state older than its own
 * last write).
 */
export class InFlight {
  /**
   * task id -> the position its write must reach, as a number: a position of the log's is far
   * below 2^53, and one below 2^31 is a small integer stored in the map's own slot, where a
   * bigint is an object of its own (24 bytes, for each task with a write under way).
   */
  private readonly until = new Map<string, number>();

  /** A write for the task is being made; its position is not known yet. */
  pending(taskId: string): void {
    this.until.set(taskId, PENDING);
  }

  /** The task's write is at `position`: decide it again once the projection is there. */
  at(taskId: string, position: bigint): void {
    this.until.set(taskId, Number(position));
  }

  clear(taskId: string): void {
    this.until.delete(taskId);
  }

  has(taskId: string): boolean {
    return this.until.has(taskId);
  }

  /** Whether the task may be decided with the projection at `position` (forgetting a write it has seen). */
  settled(taskId: string, position: bigint): boolean {
    const until = this.until.get(taskId);
    if (until === undefined) return true;
    if (until === PENDING || until > Number(position)) return false;
    this.until.delete(taskId);
    return true;
  }
}

const PENDING = -2;
