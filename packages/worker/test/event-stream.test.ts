import { describe, expect, it } from "vitest";
import { EventStreamParser } from "../src/remote/link.js";

/** The events of `text`, fed to a parser in chunks cut at `cuts`. */
function parse(text: string, cuts: readonly number[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const p = new EventStreamParser((event, data) => out.push([event, data]));
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    p.push(text.slice(from, cut));
    from = cut;
  }
  return out;
}

describe("EventStreamParser: Server-Sent Events in whatever chunks they come", () => {
  const big = JSON.stringify({
    messages: Array.from({ length: 500 }, (_, i) => ({ kind: "run", token: `t${i}` })),
  });
  const stream = `: open\n\nevent: commands\ndata: ${big}\nid: 1\n\nevent: ping\ndata: {}\n\nevent: closed\r\ndata: {"reason":"bye"}\r\n\r\n`;
  const whole: Array<[string, string]> = [
    ["commands", big],
    ["ping", "{}"],
    ["closed", '{"reason":"bye"}'],
  ];

  it("given the stream in one chunk, then each event is read once, comments left out", () => {
    expect(parse(stream, [])).toEqual(whole);
  });

  it("given it cut everywhere an end could be split (between two line feeds, or a CR and its LF), then the same events", () => {
    const at = (s: string) => {
      const out: number[] = [];
      for (let i = stream.indexOf(s); i >= 0; i = stream.indexOf(s, i + 1)) out.push(i + 1);
      return out;
    };
    for (const cut of [...at("\n\n"), ...at("\r\n")]) expect(parse(stream, [cut])).toEqual(whole);
  });

  it("given it in chunks of every size from 1 to 97 characters, then the same events", () => {
    for (let size = 1; size < 98; size += 8) {
      const cuts: number[] = [];
      for (let i = size; i < stream.length; i += size) cuts.push(i);
      expect(parse(stream, cuts)).toEqual(whole);
    }
  });
});
