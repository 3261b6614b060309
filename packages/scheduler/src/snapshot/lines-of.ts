import { createReadStream } from "node:fs";

/**
 * The lines of a file, read `chunkChars` at a time (never the whole file as one string unless it
 * is one line). Each piece is searched once; a line longer than a piece is gathered from its
 * parts and joined once, so a long line (a block of many tasks, or an older version's snapshot
 * of one line, read only to be refused) costs its length, not its square. Stopping early
 * (`return`, or an error in the reader) closes the file.
 */
export async function* linesOf(path: string, chunkChars = 1 << 20): AsyncGenerator<string> {
  const stream = createReadStream(path, { encoding: "utf8", highWaterMark: chunkChars });
  let parts: string[] = [];
  try {
    for await (const piece of stream) {
      const text = piece as string;
      let start = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        const end = text.slice(start, nl);
        if (parts.length > 0) {
          parts.push(end);
          yield parts.join("");
          parts = [];
        } else yield end;
        start = nl + 1;
      }
      if (start < text.length) parts.push(text.slice(start));
    }
    if (parts.length > 0) yield parts.join("");
  } finally {
    stream.destroy();
  }
}
