import type { RunCommand } from "@chronolog/worker";
import type { Dispatcher } from "./dispatcher.js";
import type { Ownership } from "./ownership.js";
import type { SchedulerLogger, SchedulerObserver } from "./scheduler-types.js";

/**
 * The one way out to the workers: attempts whose intents are durable, the start permission of an
 * attempt that waits for it, once its start is durable, and the order to stop one. Only attempts of shards
 * still held here go out.
 */
export class Outbox {
  /** Who hears of the tokens of attempts handed to workers (the reconcile loop). */
  private readonly listeners = new Set<(tokens: readonly string[]) => void>();

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly ownership: Ownership,
    private readonly logger: SchedulerLogger,
    private readonly observer: SchedulerObserver | undefined,
    /** The scheduler's counters: attempts handed to workers are counted here. */
    private readonly counters: { dispatched: number },
  ) {}

  /**
   * Hands attempts whose intents are durable to the workers: those of the shards still held
   * here. A shard may have moved, or this scheduler been fenced, while an intent was being
   * written (its append acknowledged only once the link came back): that attempt goes to no
   * worker, and the shard's owner finds the intent unconfirmed and abandons it, to be tried again.
   */
  send(commands: readonly RunCommand[]): void {
    const ready = this.ownership.sharded ? commands.filter((c) => this.ownership.ownsCommand(c)) : commands;
    if (ready.length < commands.length)
      this.logger.warn(
        { attempts: commands.length - ready.length },
        "intents not handed to workers: their shards are no longer held here",
      );
    if (ready.length === 0) return;
    this.counters.dispatched += ready.length;
    try {
      // Every intent in `ready` is durable: only now do the workers hear of them.
      this.observer?.beforeDispatch?.(ready);
      this.dispatcher.dispatch(ready);
      if (this.observer?.dispatched || this.listeners.size > 0) {
        const tokens = ready.map((c) => c.token);
        this.observer?.dispatched?.(tokens);
        for (const l of this.listeners) l(tokens);
      }
    } catch (error) {
      this.logger.error({ err: error }, "could not hand attempts to the workers");
    }
  }

  /** An attempt's start is durable: it gets its start permission (unless this scheduler is fenced: then it stops). */
  proceed(token: string): void {
    // (Fenced, the attempt's worker was killed; an answer that comes in late lets nothing run.)
    if (this.ownership.fenced) {
      this.dispatcher.cancel(token, "its scheduler is fenced");
      return;
    }
    this.observer?.beforeProceed?.(token);
    this.dispatcher.proceed(token);
  }

  stop(token: string, reason: string): void {
    this.dispatcher.cancel(token, reason);
  }

  onDispatched(listener: (tokens: readonly string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
