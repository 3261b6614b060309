import type { Caller } from "./auth.js";
import { HttpProblem } from "./problem.js";

/** How many live streams (`/events`, a followed output) the server keeps open. */
export interface StreamLimits {
  /** Per token (requests without one, on a `--public-read` server, count as one token). */
  readonly perToken: number;
  /** In all. */
  readonly total: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = { perToken: 16, total: 256 };

/** One open stream: closed by the server when its token is revoked. */
export interface StreamSlot {
  /** What closes the stream; called at once if the token was revoked meanwhile. */
  onRevoke(close: () => void): void;
  /** Whether its token was revoked (the stream must end). */
  readonly revoked: boolean;
  /** Gives the slot back (idempotent). */
  release(): void;
}

/**
 * The open streams, by token: refuses one over the caps (429, with Retry-After), and closes
 * every stream of a token the moment the log says it was revoked.
 */
export class StreamRegistry {
  private readonly byToken = new Map<string, Set<Slot>>();
  private open = 0;

  constructor(readonly limits: StreamLimits = DEFAULT_STREAM_LIMITS) {}

  get count(): number {
    return this.open;
  }

  admit(caller: Caller): StreamSlot {
    const name = caller.token?.name ?? "";
    const mine = this.byToken.get(name) ?? new Set<Slot>();
    const who = name ? `token ${name}` : "requests without a token";
    if (mine.size >= this.limits.perToken)
      throw new HttpProblem(
        429,
        "too_many_streams",
        `${who} already ${mine.size === 1 ? "has 1 stream" : `has ${mine.size} streams`} open, the most one token may (close one first)`,
        { limit: this.limits.perToken, open: mine.size },
        { "retry-after": "5" },
      );
    if (this.open >= this.limits.total)
      throw new HttpProblem(
        429,
        "too_many_streams",
        `this server already has ${this.open} streams open, the most it keeps (try again later)`,
        { limit: this.limits.total, open: this.open },
        { "retry-after": "5" },
      );
    const slot = new Slot(() => {
      mine.delete(slot);
      if (mine.size === 0) this.byToken.delete(name);
      this.open -= 1;
    });
    mine.add(slot);
    this.byToken.set(name, mine);
    this.open += 1;
    return slot;
  }

  /** Ends every stream of the token (it was revoked). */
  revoke(name: string): void {
    for (const slot of [...(this.byToken.get(name) ?? [])]) slot.revoke();
  }
}

class Slot implements StreamSlot {
  private close: (() => void) | null = null;
  private released = false;
  revoked = false;

  constructor(private readonly free: () => void) {}

  onRevoke(close: () => void): void {
    this.close = close;
    if (this.revoked) close();
  }

  revoke(): void {
    if (this.revoked) return;
    this.revoked = true;
    this.close?.();
    this.release();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.free();
  }
}

/**
 * At most `concurrent` jobs at once and `queued` more waiting; one past that is refused with
 * 503 and Retry-After, so that a burst of distinct jobs cannot take all the memory at once.
 */
export class Gate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly concurrent: number,
    readonly queued: number,
    private readonly what: string,
  ) {}

  /** Jobs running now. */
  get active(): number {
    return this.running;
  }

  /** Jobs waiting for a turn. */
  get pending(): number {
    return this.waiting.length;
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrent) {
      if (this.waiting.length >= this.queued)
        throw new HttpProblem(
          503,
          "busy",
          `${this.running} ${this.what} are under way and ${this.waiting.length} wait, the most this server takes at once: try again shortly`,
          { concurrent: this.concurrent, queued: this.queued },
          { "retry-after": "1" },
        );
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running += 1;
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      // The turn passes straight to the next in line (the count stays); none: one fewer.
      if (next) next();
      else this.running -= 1;
    }
  }
}

/** The hosts a loopback-bound server answers to: localhost, 127.0.0.1, [::1] (with its port). */
export function loopbackHosts(boundHost: string, port: number): Set<string> {
  const names = new Set(["localhost", "127.0.0.1", "[::1]"]);
  if (/^127\.\d+\.\d+\.\d+$/.test(boundHost)) names.add(boundHost);
  const hosts = new Set<string>();
  for (const n of names) hosts.add(`${n}:${port}`);
  return hosts;
}

/**
 * The headers every answer carries. The web UI is a module script and a stylesheet of its own
 * origin, and talks only to it: nothing inline, nothing from elsewhere, never in a frame.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};
