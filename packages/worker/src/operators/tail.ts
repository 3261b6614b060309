import { OUTPUT_TAIL_BYTES } from "../protocol.js";

/**
 * Keeps the last `limit` bytes written to it in a fixed ring buffer: memory stays bounded no
 * matter how much a task prints.
 */
export class TailBuffer {
  private readonly ring: Buffer;
  private pos = 0;
  private full = false;

  constructor(readonly limit: number = OUTPUT_TAIL_BYTES) {
    this.ring = Buffer.alloc(limit);
  }

  write(chunk: Uint8Array | string): void {
    let data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (this.limit === 0) return;
    if (data.length >= this.limit) {
      data = data.subarray(data.length - this.limit);
      this.ring.set(data, 0);
      this.pos = 0;
      this.full = true;
      return;
    }
    const first = Math.min(data.length, this.limit - this.pos);
    this.ring.set(data.subarray(0, first), this.pos);
    if (first < data.length) {
      this.ring.set(data.subarray(first), 0);
      this.full = true;
    }
    const next = this.pos + data.length;
    if (next >= this.limit) this.full = true;
    this.pos = next % this.limit;
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
