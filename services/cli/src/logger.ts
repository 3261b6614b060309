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
  // Written asynchronously: a line logged while an earlier write is under way joins the next
  // write, so a scheduler logging thousands of lines a second makes a few writes, not one
  // system call a line on its own thread (which waits while the pipe's reader is behind).
  // What is held is written before the process exits; only a SIGKILL loses the last lines.
  return pino({ name, level }, pino.destination({ dest: 2, sync: false }));
}
