import type { RunCommand } from "@chronolog/worker";

/**
 * Attempts of each queue waiting for a free slot on one of its workers, in order, with their
 * tokens indexed: whether one waits here, and which queue it waits in, is a look-up.
 */
export class Backlog {
  /** queue -> its attempts waiting, oldest first. */
  private readonly lists = new Map<string, RunCommand[]>();
  /** token -> its queue, for every attempt waiting. */
  private readonly queues = new Map<string, string>();

  push(queue: string, cmd: RunCommand): void {
    const list = this.lists.get(queue) ?? [];
    list.push(cmd);
    this.lists.set(queue, list);
    this.queues.set(cmd.token, queue);
  }

  /** The queue the attempt `token` waits in, if it waits here. */
  queueOf(token: string): string | undefined {
    return this.queues.get(token);
  }

  /** How many attempts of the queue wait. */
  size(queue: string): number {
    return this.lists.get(queue)?.length ?? 0;
  }

  /** How many wait in all. */
  get total(): number {
    return this.queues.size;
  }

  /** Takes the queue's oldest attempts, as long as `take` gives each a place (returns true). */
  drain(queue: string, take: (cmd: RunCommand) => boolean): void {
    const list = this.lists.get(queue);
    if (!list) return;
    let taken = 0;
    while (taken < list.length && take(list[taken] as RunCommand)) {
      this.queues.delete((list[taken] as RunCommand).token);
      taken += 1;
    }
    // One splice, not a shift a command: a backlog of thousands drains in linear time.
    list.splice(0, taken);
    if (list.length === 0) this.lists.delete(queue);
  }

  /** Takes the attempt `token` out, if it waits here. */
  remove(token: string): RunCommand | undefined {
    const queue = this.queues.get(token);
    const list = queue !== undefined ? this.lists.get(queue) : undefined;
    const i = list ? list.findIndex((c) => c.token === token) : -1;
    if (queue === undefined || !list || i < 0) return undefined;
    const [cmd] = list.splice(i, 1);
    this.queues.delete(token);
    if (list.length === 0) this.lists.delete(queue);
    return cmd;
  }

  clear(): void {
    this.lists.clear();
    this.queues.clear();
  }
}
