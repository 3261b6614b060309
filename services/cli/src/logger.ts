import pino from "pino";

export type Logger = pino.Logger;

/**
 * Structured logs on stderr (JSON lines), so stdout stays for command output. On a terminal,
 * or with CHRONOLOG_LOG_FORMAT=pretty, lines are made readable with pino-pretty.
 */
export function createLogger(name: string, level = process.env.CHRONOLOG_LOG_LEVEL ?? "info"): Logger {
  const pretty =
    process.env.CHRONOLOG_LOG_FORMAT === "pretty" ||
    (process.env.CHRONOLOG_LOG_FORMAT !== "json" && process.stderr.isTTY);
  if (pretty) {
    return pino({
      name,
      level,
      transport: {
        target: "pino-pretty",
        // One line per thing that happened: the fields on the same line as the message.
        options: {
          destination: 2,
          colorize: process.stderr.isTTY === true && process.env.NO_COLOR === undefined,
          ignore: "pid,hostname,name",
          translateTime: "HH:MM:ss.l",
          singleLine: true,
        },
      },
    });
  }
  return pino({ name, level }, turnBufferedStderr());
}

/** Most bytes of lines held before they are written (below the stream's largest write). */
const HELD_BYTES = 8192;

/**
 * Stderr, written once per turn of the event loop (or each HELD_BYTES): every line of a turn in
 * one write. A scheduler settling thousands of intervals a second logs a line for each, and a
 * write of each (a system call, which waits while a pipe's reader is behind) took a tenth of
 * its thread. What is held is written before the process exits (an exit, an uncaught error);
 * only a SIGKILL in the turn that logged them loses lines.
 */
function turnBufferedStderr(): { write(line: string): boolean } {
  const dest = pino.destination({ dest: 2, sync: true, minLength: HELD_BYTES });
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    try {
      dest.flushSync();
    } catch {
      // (Stderr closed: the lines have nowhere to go.)
    }
  };
  process.on("exit", flush);
  return {
    write(line: string): boolean {
      const written = dest.write(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
      return written;
    },
  };
}
