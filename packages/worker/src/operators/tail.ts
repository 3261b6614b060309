import { OUTPUT_TAIL_BYTES } from "../protocol.js";

/**
 * Keeps the last `limit` bytes written to it in a ring buffer: memory stays bounded no matter how
 * much a task prints. The buffer grows with what is written, up to `limit` (an attempt's output
 * file keeps half a MiB of tail: allocated whole, that was half a MiB zeroed for every attempt,
 * most of which print a line or nothing).
 */
export class TailBuffer {
  private ring: Buffer;
  private pos = 0;
  private full = false;

  constructor(readonly limit: number = OUTPUT_TAIL_BYTES) {
    this.ring = Buffer.allocUnsafe(Math.min(limit, 256));
  }

  write(chunk: Uint8Array | string): void {
    let data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (this.limit === 0) return;
    if (data.length >= this.limit) {
      data = data.subarray(data.length - this.limit);
      this.grow(this.limit);
      this.ring.set(data, 0);
      this.pos = 0;
      this.full = true;
      return;
    }
    // Not yet at its limit: grown to hold it all (so nothing wraps before the limit is reached).
    if (this.ring.length < this.limit && this.pos + data.length >= this.ring.length)
      this.grow(this.pos + data.length + 1);
    const size = this.ring.length;
    const first = Math.min(data.length, size - this.pos);
    this.ring.set(data.subarray(0, first), this.pos);
    if (first < data.length) {
      this.ring.set(data.subarray(first), 0);
      this.full = true;
    }
    const next = this.pos + data.length;
    if (next >= size) this.full = true;
    this.pos = next % size;
  }

  /** To at least `needed` bytes (at most `limit`), what is written so far kept in place. */
  private grow(needed: number): void {
    const size = Math.min(this.limit, Math.max(needed, this.ring.length * 2));
    if (size <= this.ring.length) return;
    const next = Buffer.allocUnsafe(size);
    this.ring.copy(next, 0, 0, this.pos);
    this.ring = next;
  }

  bytes(): Buffer {
    if (!this.full) return Buffer.from(this.ring.subarray(0, this.pos));
    return Buffer.concat([this.ring.subarray(this.pos), this.ring.subarray(0, this.pos)]);
  }

  /** The tail as UTF-8, dropping a multi-byte character cut in half at the front. */
  toString(): string {
    const bytes = this.bytes();
    let start = 0;
    while (start < bytes.length && start < 3 && (bytes[start]! & 0xc0) === 0x80) start++;
    return bytes.subarray(start).toString("utf8");
  }
}

/** The last `limit` bytes of a string, as a string. */
export function tailOf(text: string, limit: number = OUTPUT_TAIL_BYTES): string {
  if (text.length <= limit / 4) return text;
  const buf = new TailBuffer(limit);
  buf.write(text);
  return buf.toString();
}
