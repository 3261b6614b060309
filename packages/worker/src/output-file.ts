import { createHash, type Hash } from "node:crypto";
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { TailBuffer } from "./operators/tail.js";
import type { OutputFileInfo } from "./protocol.js";

/** What an attempt may keep of its output by default: 1 MiB. */
export const DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024;

/** `<outputRoot>/<token>.log`, the token made safe as one file name. */
export function outputPathFor(outputRoot: string, token: string): string {
  const name = token.replace(/[^A-Za-z0-9._-]/g, "_");
  return join(resolve(outputRoot), `${name}.log`);
}

/** The line that stands where output was dropped. */
export function cutMarker(bytes: number): string {
  return `\n[... ${bytes} bytes cut ...]\n`;
}

/**
 * One attempt's output (stdout and stderr interleaved, as they arrive) kept in a file, up to
 * `maxBytes`. The first half of the budget is written as it comes, so the file can be followed
 * while the attempt runs; past it, only the last half is kept, in memory, and written after a
 * `[... N bytes cut ...]` line when the attempt ends. The file's SHA-256 is computed on the way
 * in, so the attempt's events can record it without reading the file back.
 */
export class OutputFile {
  private fd: number | undefined;
  private readonly hash: Hash = createHash("sha256");
  private readonly headLimit: number;
  private readonly tail: TailBuffer;
  private written = 0;
  private seen = 0;
  private failed: string | undefined;

  private constructor(
    readonly path: string,
    maxBytes: number,
  ) {
    this.headLimit = Math.floor(maxBytes / 2);
    this.tail = new TailBuffer(maxBytes - this.headLimit);
    try {
      // Only the worker's user reads them: a task's output may hold what others must not see.
      mkdirSync(resolve(path, ".."), { recursive: true, mode: 0o700 });
      this.fd = openSync(path, "w", 0o600);
    } catch (err) {
      this.failed = (err as Error).message;
    }
  }

  /** The file for an attempt, or undefined when output files are off (`maxBytes` 0). */
  static open(outputRoot: string, token: string, maxBytes: number): OutputFile | undefined {
    if (maxBytes <= 0) return undefined;
    return new OutputFile(outputPathFor(outputRoot, token), maxBytes);
  }

  write(chunk: Uint8Array | string): void {
    const data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    this.seen += data.length;
    const room = this.headLimit - this.written;
    if (room > 0) {
      const head = data.length <= room ? data : data.subarray(0, room);
      this.append(head);
      if (head.length < data.length) this.tail.write(data.subarray(room));
    } else {
      this.tail.write(data);
    }
  }

  /** Writes what was kept of the end, closes the file and says what it holds. */
  close(): OutputFileInfo {
    const tail = this.tail.bytes();
    const cut = this.seen - this.written - tail.length;
    if (cut > 0) this.append(Buffer.from(cutMarker(cut)));
    if (tail.length > 0) this.append(tail);
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {}
      this.fd = undefined;
    }
    return {
      path: this.path,
      bytes: this.written,
      sha256: this.hash.digest("hex"),
      cutBytes: Math.max(0, cut),
      ...(this.failed ? { error: this.failed } : {}),
    };
  }

  private append(data: Uint8Array): void {
    if (this.fd === undefined || data.length === 0) return;
    try {
      let off = 0;
      while (off < data.length) off += writeSync(this.fd, data, off, data.length - off);
      this.hash.update(data);
      this.written += data.length;
    } catch (err) {
      // A full disk must not fail the task: the file stops here and says so in the events.
      this.failed = (err as Error).message;
      try {
        closeSync(this.fd);
      } catch {}
      this.fd = undefined;
    }
  }
}
