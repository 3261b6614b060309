import { createHash } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { type OutputFileInfo, outputPathFor } from "@chronolog/worker";
import { RemoteRefusal } from "./refusal.js";

/** What a remote attempt's output file may grow to beyond the limit: the cut marker's line. */
const MARKER_ALLOWANCE = 256;

/**
 * Remote attempts' output, streamed home in chunks by offset into the file a local attempt's
 * output would have (`<outputRoot>/<token>.log`), so that `logs --follow`, the API and the UI
 * read it as they read a local one. A chunk must start where the file ends (a worker that lost
 * an answer learns the size and goes on from there); the file never grows past the scheduler's
 * output limit.
 */
export class OutputSink {
  constructor(
    private readonly outputRoot: string,
    private readonly maxBytes: number,
  ) {}

  /** Where the attempt's output is kept here. */
  pathOf(token: string): string {
    return outputPathFor(this.outputRoot, token);
  }

  /** The file's size now (0 when there is none). */
  size(token: string): number {
    try {
      return statSync(this.pathOf(token)).size;
    } catch {
      return 0;
    }
  }

  /** Appends a chunk at `offset`; returns the file's size after it. */
  write(token: string, offset: number, chunk: Uint8Array): number {
    const path = this.pathOf(token);
    const size = offset === 0 ? 0 : this.size(token);
    if (offset !== size)
      throw new RemoteRefusal(
        409,
        "output_offset",
        `the output of ${token} is ${size} bytes here: send from offset ${size}, not ${offset}`,
        { bytes: size },
      );
    if (offset + chunk.length > this.maxBytes + MARKER_ALLOWANCE)
      throw new RemoteRefusal(
        413,
        "output_too_large",
        `the output of ${token} would pass this scheduler's limit of ${this.maxBytes} bytes`,
        { limitBytes: this.maxBytes },
      );
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const fd = openSync(path, offset === 0 ? "w" : "a", 0o600);
    try {
      writeSync(fd, chunk);
    } finally {
      closeSync(fd);
    }
    return offset + chunk.length;
  }

  /**
   * The rest of an attempt's output carried by its end report, from `offset`: what this file
   * already holds of it is skipped (an upload that arrived meanwhile); one that would leave a gap
   * or pass the limit is left out, and the end records the file as it is here (see settle).
   */
  writeRest(token: string, offset: number, chunk: Uint8Array): void {
    const size = this.size(token);
    if (offset > size || offset + chunk.length <= size) return;
    try {
      this.write(token, size, chunk.subarray(size - offset));
    } catch (error) {
      if (!(error instanceof RemoteRefusal)) throw error;
    }
  }

  /**
   * The output file a remote attempt's end records: the one here, checked against the size and
   * SHA-256 the worker reported. One that did not all arrive (or arrived different) is recorded
   * as it is here, with what is missing said in its `error`.
   */
  settle(token: string, reported: OutputFileInfo): OutputFileInfo {
    const path = this.pathOf(token);
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch {
      bytes = Buffer.alloc(0);
    }
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    if (bytes.length === reported.bytes && sha256 === reported.sha256) return { ...reported, path };
    return {
      path,
      bytes: bytes.length,
      sha256,
      cutBytes: reported.cutBytes,
      error: `${bytes.length} of the worker's ${reported.bytes} bytes of output reached the scheduler${bytes.length === reported.bytes ? " (different bytes)" : ""}${reported.error ? `; ${reported.error}` : ""}`,
    };
  }
}
