import { writeSync } from "node:fs";
import pino from "pino";
import { sleepSync } from "./sleep-sync.js";

export type Logger = pino.Logger;

/**
 * Structured logs on stderr (JSON lines), so stdout stays for command output. On a terminal,
 * or with CHRONOLOG_LOG_FORMAT=pretty, lines are made readable with pino-pretty.
 */
export function createLogger(name: string, level = process.env.CHRONOLOG_LOG_LEVEL ?? "info"): Logger {
  // A service's stderr is its log: if its reader goes away (a log collector that died), what
  // is written there is lost, and the service goes on (and stops cleanly when asked), rather
  // than dying of the first write's EPIPE.
  if (process.stderr.listenerCount("error") === 0) process.stderr.on("error", () => {});
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
  return pino({ name, level }, stderrLines());
}

/** Most characters of lines held before they are written at once, within a turn. */
const HELD_CHARS = 64 * 1024;
/** How long a write to a full pipe is tried again before the held lines are dropped, ms. */
const FULL_PIPE_MS = 2000;

/**
 * Stderr, one write a turn of the event loop: the lines logged in a turn are held and written
 * together when it ends (or once they pass HELD_CHARS), so a scheduler logging thousands of
 * lines a second makes a write a turn, not one a line. Written synchronously, on this thread:
 * no write waits for the thread pool (which tasks' files and secrets may keep busy), and what is
 * held is written before the process exits. A full pipe is tried again for FULL_PIPE_MS; once
 * a write fails otherwise (the reader is gone), lines are dropped and the process goes on.
 */
function stderrLines(): { write(line: string): boolean } {
  let held: string[] = [];
  let chars = 0;
  let scheduled = false;
  let broken = false;
  const flush = () => {
    scheduled = false;
    if (held.length === 0) return;
    let rest = Buffer.from(held.join(""));
    held = [];
    chars = 0;
    let fullSince = 0;
    while (!broken && rest.length > 0) {
      try {
        rest = rest.subarray(writeSync(2, rest));
        fullSince = 0;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "EAGAIN" && code !== "EBUSY") broken = true;
        else if (fullSince === 0) fullSince = Date.now();
        else if (Date.now() - fullSince > FULL_PIPE_MS)
          return; // these lines are dropped
        else sleepSync(10);
      }
    }
  };
  process.on("exit", flush);
  return {
    write(line: string): boolean {
      if (broken) return true;
      held.push(line);
      chars += line.length;
      if (chars >= HELD_CHARS) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
      return true;
    },
  };
}
