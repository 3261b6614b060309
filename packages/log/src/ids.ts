import { randomFillSync } from "node:crypto";

/** Random bytes drawn for 256 ids at a time, as node's own randomUUID draws them. */
const POOL_BYTES = 16 * 256;
const pool = Buffer.alloc(POOL_BYTES);
let next = POOL_BYTES;
/** The two ASCII hex digits of each byte value. */
const HEX = Buffer.from(
  Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0")).join(""),
  "latin1",
);
/** Where each of the 16 bytes' two digits go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`. */
const PLACES = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const text = Buffer.from("00000000-0000-0000-0000-000000000000", "latin1");

/**
 * A random (version 4) UUID in lower case, as `crypto.randomUUID()` makes one. Its text is
 * written into one buffer and read out as one string: the scheduler makes an id for every event
 * and a token for every attempt, and node's own builds each id from some twenty joined strings,
 * ten times the garbage.
 */
export function randomId(): string {
  if (next === POOL_BYTES) {
    randomFillSync(pool);
    next = 0;
  }
  for (let i = 0; i < 16; i++) {
    let b = pool[next + i] as number;
    if (i === 6)
      b = (b & 0x0f) | 0x40; // the version, 4
    else if (i === 8) b = (b & 0x3f) | 0x80; // the variant, 10xx
    const at = PLACES[i] as number;
    text[at] = HEX[2 * b] as number;
    text[at + 1] = HEX[2 * b + 1] as number;
  }
  next += 16;
  return text.toString("latin1", 0, 36);
}
