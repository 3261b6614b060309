import { request } from "node:http";
import { join } from "node:path";
import { type ApiServer, issueToken, startApiServer } from "@chronolog/api";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { tempDataDir } from "../support/cli.js";

export interface Api {
  readonly dir: string;
  readonly log: EventLog;
  readonly server: ApiServer;
  readonly token: string;
}

/** A data directory with an embedded log, a read token, and the API serving it on loopback. */
export async function openApi(options: { sseMaxLag?: number } = {}): Promise<Api> {
  const dir = tempDataDir("api-events");
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test", synchronous: "NORMAL" });
  const { token } = await issueToken(log, { name: "reader", scope: "read" });
  const server = await startApiServer({
    log,
    dataDir: dir,
    listen: "127.0.0.1:0",
    ...(options.sseMaxLag !== undefined ? { sseMaxLag: options.sseMaxLag } : {}),
  });
  return { dir, log, server, token };
}

/**
 * Appends `count` Note events in batches of `batch`, spread over `streams` streams; returns the
 * position of the last.
 */
export async function writeNotes(
  log: EventLog,
  count: number,
  o: { batch?: number; streams?: number; text?: string; prefix?: string } = {},
): Promise<bigint> {
  let last = -1n;
  const batch = o.batch ?? 50;
  const streams = o.streams ?? 4;
  const text = o.text ?? "n";
  for (let i = 0, b = 0; i < count; b++) {
    const n = Math.min(batch, count - i);
    const events = Array.from({ length: n }, (_, k) => ({ type: "Note", data: { text, seq: i + k } }));
    const r = await log.append(`note-${o.prefix ?? "w"}${b % streams}`, events, {
      expectedRevision: "any",
    });
    last = r.position;
    i += n;
  }
  return last;
}

export interface SseFrame {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/**
 * An SSE client over node:http: frames as they arrive, the status, and how to stop (destroy the
 * socket) or stall (stop reading from it) and resume.
 */
export class SseClient {
  readonly frames: SseFrame[] = [];
  status = 0;
  ended = false;
  private buffer = "";
  private readonly listeners = new Set<() => void>();
  private res: import("node:http").IncomingMessage | null = null;
  private req!: import("node:http").ClientRequest;
  readonly opened: Promise<number>;

  constructor(url: string, headers: Record<string, string> = {}, o: { stalled?: boolean } = {}) {
    this.opened = new Promise((resolve, reject) => {
      this.req = request(url, { headers: { accept: "text/event-stream", ...headers } }, (res) => {
        this.res = res;
        this.status = res.statusCode ?? 0;
        res.setEncoding("utf8");
        if (o.stalled) res.pause();
        res.on("data", (chunk: string) => this.feed(chunk));
        res.on("end", () => this.finish());
        res.on("close", () => this.finish());
        res.on("error", () => this.finish());
        resolve(this.status);
      });
      this.req.on("error", (e) => {
        this.finish();
        reject(e);
      });
      this.req.end();
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let cut = this.buffer.indexOf("\n\n");
    while (cut >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const frame: { id?: string; event?: string; data: string } = { data: "" };
      const data: string[] = [];
      let any = false;
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") frame.id = value;
        else if (field === "event") frame.event = value;
        else if (field === "data") data.push(value);
        else continue;
        any = true;
      }
      if (any) {
        frame.data = data.join("\n");
        this.frames.push(frame);
      }
      cut = this.buffer.indexOf("\n\n");
    }
    this.notify();
  }

  private finish(): void {
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  /** Resolves once `check` holds (checked at each chunk and at the end), or fails after `ms`. */
  until(check: () => boolean, ms = 20_000, what = "the SSE client's condition"): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(l);
        reject(new Error(`timed out waiting for ${what} (${this.frames.length} frames)`));
      }, ms);
      const l = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.listeners.delete(l);
        resolve();
      };
      this.listeners.add(l);
    });
  }

  /** The positions of the events received (the frames with an id). */
  positions(): bigint[] {
    return this.frames.filter((f) => f.id !== undefined).map((f) => BigInt(f.id as string));
  }

  lastId(): string | undefined {
    return this.frames.findLast((f) => f.id !== undefined)?.id;
  }

  resume(): void {
    this.res?.resume();
  }

  close(): void {
    this.req.destroy();
    this.res?.destroy();
  }
}
