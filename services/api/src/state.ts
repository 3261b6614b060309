import {
  ACCESS_TOKEN_STREAM,
  formatTaskKey,
  jsonWithBigints,
  type SchedulerProjection,
  slotsIn,
} from "@chronolog/core";
import type { EventLog, RecordedEvent, Subscription } from "@chronolog/log";
import { type BackfillPlan, loadProjection } from "@chronolog/scheduler";
import { readTokens, type TokenBook } from "./tokens/index.js";

/** An event as the API sends it: serialised once, whoever reads it. */
export interface WireEvent {
  readonly position: bigint;
  readonly streamId: string;
  readonly type: string;
  readonly json: string;
  /** The event's data (parsed again from its JSON once that is made). */
  readonly data: unknown;
}

/** JSON with bigints as strings (positions, revisions): for values that hold some. */
export const toJsonWithBigints = (value: unknown): string => jsonWithBigints(value);

/**
 * The same JSON, for values that usually hold no bigint (task rows, connections, plans). A
 * replacer makes `JSON.stringify` about twice as slow, so it is used only when the plain call
 * refuses a bigint; a value that holds one pays for both, and should use `toJsonWithBigints`.
 */
export function toJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return toJsonWithBigints(value);
  }
}

/**
 * Serialised on first read, then kept: the window takes every event the API follows, and most
 * are never asked for when no live client is behind (serialising each as it came was a tenth
 * of the follower's time, on the scheduler's event loop).
 */
class LazyWireEvent implements WireEvent {
  readonly position: bigint;
  readonly streamId: string;
  readonly type: string;
  private event: RecordedEvent | null;
  private text: string | null = null;

  constructor(e: RecordedEvent) {
    this.position = e.position;
    this.streamId = e.streamId;
    this.type = e.type;
    this.event = e;
  }

  get json(): string {
    if (this.text === null) {
      const e = this.event as RecordedEvent;
      this.text = toJsonWithBigints({
        position: e.position,
        streamId: e.streamId,
        revision: e.revision,
        type: e.type,
        data: e.data,
        metadata: e.metadata,
      });
      this.event = null;
    }
    return this.text;
  }

  get data(): unknown {
    return this.event !== null ? this.event.data : JSON.parse(this.text as string).data;
  }
}

export const wireEvent = (e: RecordedEvent): WireEvent => new LazyWireEvent(e);

/**
 * What older history the API looks things up by, that the projection forgets once work ends:
 * which attempt stream a token belongs to, and which resets a backfill wrote. Nothing is kept
 * until the first lookup: that one reads the log up to the follower's position once, and from
 * then on the follower adds what it applies. A server never asked pays nothing for it.
 */
class HistoryIndex {
  private readonly tokens = new Map<string, string>();
  private readonly backfills = new Map<string, { resets: RecordedEvent[] }>();
  private filled: Promise<void> | null = null;
  private following = false;

  constructor(
    private readonly log: EventLog,
    /** The position the follower has applied, up to which the first lookup reads the log. */
    private readonly applied: () => bigint,
  ) {}

  add(e: RecordedEvent): void {
    if (!this.following) return;
    if (e.type === "DispatchIntended") this.tokens.set(e.data.token, e.streamId);
    else if (e.type === "IntervalReset" && e.data.backfillId) {
      const b = this.backfills.get(e.data.backfillId) ?? { resets: [] };
      if (!b.resets.some((r) => r.position === e.position)) b.resets.push(e);
      b.resets.sort((x, y) => (x.position < y.position ? -1 : 1));
      this.backfills.set(e.data.backfillId, b);
    }
  }

  private fill(): Promise<void> {
    this.filled ??= (async () => {
      // From here the follower adds what comes after `end`; the log gives what came before.
      this.following = true;
      const end = this.applied();
      let from = 0n;
      while (from <= end) {
        const page = await this.log.readAll({ fromPosition: from, maxCount: 5000 });
        if (page.length === 0) break;
        for (const e of page) if (e.position <= end) this.add(e);
        from = (page.at(-1) as RecordedEvent).position + 1n;
      }
    })();
    return this.filled;
  }

  async streamOfToken(token: string): Promise<string | undefined> {
    await this.fill();
    return this.tokens.get(token);
  }

  async backfillResets(id: string): Promise<readonly RecordedEvent[] | undefined> {
    await this.fill();
    return this.backfills.get(id)?.resets;
  }
}

/**
 * The API's own view of the log: a projection of its own (the scheduler's is never touched
 * from here), the access tokens, a short window of recent events for the live stream, and the
 * lookups of older history. It follows the log through one subscription.
 */
export class ApiState {
  /** The most recent events, in order, for live clients to read without touching the log. */
  private readonly recent: WireEvent[] = [];
  private waiters: Array<() => void> = [];
  private readonly listeners = new Set<(e: RecordedEvent) => void>();
  private sub: Subscription | null = null;
  private caughtUp = false;
  head: { position: bigint; hash: string } = { position: -1n, hash: "" };
  readonly index: HistoryIndex;

  private constructor(
    readonly log: EventLog,
    readonly projection: SchedulerProjection,
    readonly tokens: TokenBook,
    private readonly recentCapacity: number,
    /** Where the checkpoints are, for a write decided on state of its own (shared mode). */
    private readonly dataDir: string,
    /** Whether this state applies events to the projection (false: the scheduler does). */
    private readonly ownsProjection: boolean,
  ) {
    this.index = new HistoryIndex(log, () => this.head.position);
  }

  /**
   * Beside a scheduler in its process: reads answer from the scheduler's own projection, fed by
   * the events it applies (`feed`), so the API adds no second fold of the log. Writes are
   * decided on a projection loaded for each, as a CLI command's is, and never touch the
   * scheduler's.
   */
  static async shared(
    log: EventLog,
    dataDir: string,
    projection: SchedulerProjection,
    feed: (listener: (e: RecordedEvent) => void) => () => void,
    options: { recentEvents?: number } = {},
  ): Promise<ApiState> {
    const tokens = await readTokens(log);
    const state = new ApiState(log, projection, tokens, options.recentEvents ?? 4096, dataDir, false);
    await state.readHead();
    state.stopFeed = feed((e) => state.apply(e));
    state.caughtUp = true;
    return state;
  }

  private stopFeed: (() => void) | null = null;

  /** The head as of the projection's position: that event's position and hash. */
  private async readHead(): Promise<void> {
    if (this.projection.position < 0n) return;
    const [last] = await this.log.readAll({ fromPosition: this.projection.position, maxCount: 1 });
    if (last) this.head = { position: last.position, hash: last.metadata.hash };
  }

  /** The projection a write is decided on: this one, or (beside a scheduler) one of its own. */
  async writeProjection(): Promise<SchedulerProjection> {
    if (this.ownsProjection) return this.projection;
    return (await loadProjection(this.log, this.dataDir)).projection;
  }

  /** Loads the projection (from the data directory's snapshot, then the log) and starts following. */
  static async open(
    log: EventLog,
    dataDir: string,
    options: { recentEvents?: number } = {},
  ): Promise<ApiState> {
    const { projection } = await loadProjection(log, dataDir);
    const tokens = await readTokens(log);
    const state = new ApiState(log, projection, tokens, options.recentEvents ?? 4096, dataDir, true);
    await state.readHead();
    state.sub = log.subscribe((e) => state.apply(e), { fromPosition: projection.position + 1n });
    void state.sub.caughtUp.then(() => {
      state.caughtUp = true;
    });
    state.sub.done.catch(() => {});
    return state;
  }

  private apply(e: RecordedEvent): void {
    if (this.ownsProjection) this.projection.apply(e);
    this.tokens.apply(e);
    this.index.add(e);
    this.head = { position: e.position, hash: e.metadata.hash };
    this.recent.push(wireEvent(e));
    if (this.recent.length > this.recentCapacity * 2)
      this.recent.splice(0, this.recent.length - this.recentCapacity);
    for (const l of this.listeners) l(e);
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Ready once the projection holds everything the log held when the API started. */
  get ready(): boolean {
    return this.caughtUp;
  }

  /** Hears every event as it is applied; returns how to stop. */
  onEvent(listener: (e: RecordedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Requests waiting for the next event now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * Resolves at the next event applied, or after `ms`, or when `signal` aborts (its client
   * went away); in the last two cases it no longer waits: it is removed.
   */
  changed(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", leave);
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve();
      };
      const timer = setTimeout(leave, ms);
      signal?.addEventListener("abort", leave, { once: true });
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", leave);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  /** Waits until the projection has applied `position` (a write just made), or `ms` passed. */
  async reach(position: bigint, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.projection.position < position && Date.now() < deadline)
      await this.changed(deadline - Date.now());
  }

  /** Events from `from` on, at most `max`: from the recent window when it holds them, else the log. */
  async eventsFrom(from: bigint, max: number): Promise<WireEvent[]> {
    const first = this.recent[0];
    if (first && from >= first.position) {
      const offset = Number(from - first.position);
      return this.recent.slice(offset, offset + max);
    }
    if (from > this.head.position) return [];
    const page = await this.log.readAll({ fromPosition: from, maxCount: max });
    return page.filter((e) => e.position <= this.head.position).map(wireEvent);
  }

  /** A backfill's plan as its resets recorded it, for its progress. */
  async backfillPlan(id: string): Promise<BackfillPlan | undefined> {
    const resets = await this.index.backfillResets(id);
    if (!resets || resets.length === 0) return undefined;
    const targets = [];
    let priority: number | undefined;
    let cancelled: BackfillPlan["cancelled"];
    for (const e of resets) {
      if (e.type !== "IntervalReset") continue;
      // (A range that joins what a cancel left walking goes on under the same id; the backfill
      // still reads as cancelled, its progress uncounted, rather than done.)
      if (e.data.reason === "backfill_cancelled") {
        cancelled ??= {
          by: e.metadata.actor,
          at: e.metadata.recordedAt,
          ...(e.data.note ? { reason: e.data.note } : {}),
        };
        continue;
      }
      priority ??= e.data.priority;
      const taskId = formatTaskKey(e.data.key);
      const task = this.projection.tasks.get(taskId);
      const from = e.data.from ?? e.data.logicalDate;
      const until = e.data.until ?? e.data.logicalDate;
      targets.push({
        task: taskId,
        from,
        until,
        intervals: task ? slotsIn(task, from, until) : 0,
        backfillId: id,
        notes: [],
      });
    }
    return {
      backfillId: id,
      writtenUpTo: (resets.at(-1) as RecordedEvent).position,
      targets,
      skipped: [],
      ...(priority !== undefined ? { priority } : {}),
      ...(cancelled ? { cancelled } : {}),
    };
  }

  /**
   * The tokens as the log holds them now: a token issued or revoked a moment ago counts at the
   * next request, without waiting for the follower (one revision lookup per request).
   */
  async currentTokens(): Promise<TokenBook> {
    const revision = await this.log.streamRevision(ACCESS_TOKEN_STREAM);
    if (revision !== this.tokens.revision) {
      const from = typeof this.tokens.revision === "bigint" ? this.tokens.revision + 1n : 0n;
      for (const e of await this.log.readStream(ACCESS_TOKEN_STREAM, { fromRevision: from }))
        this.tokens.apply(e);
    }
    return this.tokens;
  }

  /** The attempt stream a token belongs to. */
  streamOfToken(token: string): Promise<string | undefined> {
    return this.index.streamOfToken(token);
  }

  async close(): Promise<void> {
    this.stopFeed?.();
    await this.sub?.close();
    for (const w of this.waiters) w();
    this.waiters = [];
  }
}
