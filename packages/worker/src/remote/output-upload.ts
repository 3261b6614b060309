import { closeSync, openSync, readSync } from "node:fs";
import { SESSION_HEADER } from "../remote-protocol.js";
import type { Link } from "./link.js";

interface Upload {
  readonly path: string;
  offset: number;
  /** The scheduler refused more (its limit): nothing more is sent. */
  stopped: boolean;
}

/**
 * Sends attempts' output home as it grows: each file kept on this host is read from where the
 * scheduler's copy ends and sent in chunks (`PUT .../attempts/{token}/output?offset=N`). A chunk
 * refused for its offset resumes from the size the scheduler says it holds.
 */
export class OutputUploads {
  private readonly uploads = new Map<string, Upload>();
  private readonly busy = new Map<string, Promise<void>>();

  constructor(
    private readonly link: Link,
    private readonly workerId: string,
    private readonly session: () => string,
    private readonly maxChunk: () => number,
  ) {}

  /** The attempt's output is kept in `path`: it is sent from now on. */
  track(token: string, path: string): void {
    if (!this.uploads.has(token)) this.uploads.set(token, { path, offset: 0, stopped: false });
  }

  get size(): number {
    return this.uploads.size;
  }

  /** Sends what every tracked file has grown by (errors are left for the next round). */
  async pump(): Promise<void> {
    await Promise.all([...this.uploads.keys()].map((t) => this.send(t).catch(() => {})));
  }

  /**
   * Sends the rest of the attempt's output, up to `bytes` (its final size), then forgets it.
   * Rejects when the link is down (the caller tries again).
   */
  async finish(token: string, bytes: number): Promise<void> {
    const u = this.uploads.get(token);
    if (!u) return;
    await this.send(token, bytes);
    this.uploads.delete(token);
  }

  /**
   * The rest of the attempt's output, up to `bytes` (its final size), to go inline in its end
   * report, when it is at most `max` bytes and no upload of it is under way; the attempt is then
   * forgotten here. Undefined otherwise (it is uploaded: see finish).
   */
  inlineRest(token: string, bytes: number, max: number): { offset: number; data: string } | undefined {
    const u = this.uploads.get(token);
    if (!u || u.stopped || this.busy.has(token) || bytes - u.offset > max) return undefined;
    const chunk = bytes > u.offset ? readFrom(u.path, u.offset, bytes - u.offset) : Buffer.alloc(0);
    if (chunk.length !== bytes - u.offset) return undefined; // (the file is not what the end says: uploaded as it is)
    this.uploads.delete(token);
    return { offset: u.offset, data: chunk.toString("base64") };
  }

  forget(token: string): void {
    this.uploads.delete(token);
  }

  /** Stops sending the attempt's output here; returns its file, for another link to send from 0. */
  take(token: string): string | undefined {
    const u = this.uploads.get(token);
    this.uploads.delete(token);
    return u?.path;
  }

  private send(token: string, upTo?: number): Promise<void> {
    const previous = this.busy.get(token) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.sendNow(token, upTo));
    this.busy.set(token, next);
    return next.finally(() => {
      if (this.busy.get(token) === next) this.busy.delete(token);
    });
  }

  private async sendNow(token: string, upTo?: number): Promise<void> {
    const u = this.uploads.get(token);
    if (!u) return;
    for (;;) {
      if (u.stopped) return;
      const chunk = readFrom(u.path, u.offset, this.maxChunk());
      if (chunk.length === 0 || (upTo !== undefined && u.offset >= upTo)) return;
      const path = `/api/v1/workers/${encodeURIComponent(this.workerId)}/attempts/${encodeURIComponent(token)}/output?offset=${u.offset}`;
      const answer = await this.link.request("PUT", path, {
        headers: { [SESSION_HEADER]: this.session(), "content-type": "application/octet-stream" },
        body: chunk,
      });
      const doc = answer.json<{ bytes?: number; type?: string }>();
      if (answer.status === 200 && typeof doc?.bytes === "number") u.offset = doc.bytes;
      else if (answer.status === 409 && typeof doc?.bytes === "number") u.offset = doc.bytes;
      // Past the limit, or an attempt the scheduler no longer gives this worker: no more of it.
      else if (answer.status === 413 || (answer.status === 409 && doc?.type?.endsWith(":not_dispatched")))
        u.stopped = true;
      else throw new Error(`output of ${token}: HTTP ${answer.status}`);
    }
  }
}

function readFrom(path: string, offset: number, max: number): Buffer {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, offset);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}
