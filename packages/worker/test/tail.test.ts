import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../test/support/random.js";
import { TailBuffer, tailOf } from "../src/operators/tail.js";

describe("TailBuffer", () => {
  it("keeps exactly the last `limit` bytes, whatever the chunks, as it grows to its limit", () => {
    const next = seededRandom(7);
    for (const limit of [1, 5, 255, 256, 257, 1000, 4096]) {
      for (let run = 0; run < 10; run++) {
        const buf = new TailBuffer(limit);
        let all = Buffer.alloc(0);
        const writes = 1 + Math.floor(next() * 30);
        for (let w = 0; w < writes; w++) {
          const size = Math.floor(next() * next() * limit * 1.5);
          const chunk = Buffer.alloc(size);
          for (let i = 0; i < size; i++) chunk[i] = Math.floor(next() * 256);
          buf.write(chunk);
          all = Buffer.concat([all, chunk]).subarray(-limit);
          if (!buf.bytes().equals(all)) expect(buf.bytes()).toEqual(all);
        }
      }
    }
  });

  it("keeps nothing with a limit of 0, and cuts a string's tail at a whole character", () => {
    const none = new TailBuffer(0);
    none.write("something");
    expect(none.bytes().length).toBe(0);
    expect(tailOf("é".repeat(10), 5)).toBe("éé");
  });
});
