import { LogClosedError } from "./errors.js";
import type { RecordedEvent } from "./types.js";

export interface SubscribeOptions {
  /** First global position to deliver (inclusive). Default: the start of the log. */
  readonly fromPosition?: bigint;
  /** Events read per batch while catching up. */
  readonly batchSize?: number;
  /** Longest wait between checks when the engine cannot notify (another process writing). */
  readonly pollMs?: number;
  /** How long reads that keep failing are retried before the subscription fails. Default 2 min. */
  readonly retryReadsMs?: number;
}

/** A live subscription: delivers every event from its start position, in order, once. */
export interface Subscription {
  /** The position the next delivered event will have at least: save it to resume. */
  readonly nextPosition: bigint;
  /** Resolves once the subscription has delivered everything committed when it started. */
  readonly caughtUp: Promise<void>;
  /** Stops delivery; resolves when the handler is no longer running. */
  close(): Promise<void>;
  /** Resolves when the subscription ends (closed, or failed: then it rejects). */
  readonly done: Promise<void>;
}

export type EventHandler = (event: RecordedEvent) => void | Promise<void>;

interface Source {
  readAll(fromPosition: bigint, maxCount: number): Promise<RecordedEvent[]>;
  headPosition(): Promise<bigint>;
  watch(listener: () => void): () => void;
}

/**
 * Catch up by reading batches, then follow: wait for a commit notification (or the poll
 * interval), read what is new, deliver. The handler runs for one event at a time; a handler
 * that throws ends the subscription with that error.
 */
export function startSubscription(
  source: Source,
  handler: EventHandler,
  options: SubscribeOptions = {},
): Subscription {
  const batchSize = options.batchSize ?? 1000;
  const pollMs = options.pollMs ?? 250;
  let next = options.fromPosition ?? 0n;
  let closed = false;
  let wake: (() => void) | null = null;
  let dirty = true;
  const unwatch = source.watch(() => {
    dirty = true;
    wake?.();
  });
  let resolveCaughtUp!: () => void;
  const caughtUp = new Promise<void>((r) => {
    resolveCaughtUp = r;
  });

  // A read that fails (a network log losing a broker) is tried again with backoff, for up to
  // `retryReadsMs` of consecutive failures; an error marked `permanent` (a backend that can no
  // longer be trusted) and the handler's own errors are never retried.
  const retryMs = options.retryReadsMs ?? 120_000;
  const read = async <T>(f: () => Promise<T>): Promise<T> => {
    let since = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await f();
      } catch (error) {
        const now = performance.now();
        if (since === 0) since = now;
        const permanent = (error as { permanent?: boolean } | null)?.permanent === true;
        if (closed || permanent || error instanceof LogClosedError || now - since >= retryMs) throw error;
        await new Promise((r) => setTimeout(r, Math.min(2000, 50 * 2 ** attempt)));
      }
    }
  };

  const run = async () => {
    const initialHead = await read(() => source.headPosition());
    if (initialHead < next) resolveCaughtUp();
    while (!closed) {
      dirty = false;
      const batch = await read(() => source.readAll(next, batchSize));
      for (const event of batch) {
        if (closed) return;
        await handler(event);
        next = event.position + 1n;
      }
      if (next > initialHead) resolveCaughtUp();
      if (batch.length === batchSize || dirty) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, pollMs);
        function finish() {
          clearTimeout(timer);
          wake = null;
          resolve();
        }
        wake = finish;
        if (dirty || closed) finish();
      });
    }
  };

  const done = run().finally(() => {
    unwatch();
    resolveCaughtUp();
  });
  // A failing subscription surfaces through `done`; keep an unobserved rejection from crashing.
  done.catch(() => {});

  return {
    get nextPosition() {
      return next;
    },
    caughtUp,
    done,
    async close() {
      closed = true;
      wake?.();
      await done.catch(() => {});
    },
  };
}
