import { createHash, type Hash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import {
  type AttemptView,
  foldInstance,
  type InstanceState,
  instanceStream,
  shortInstant,
  TERMINAL_INSTANCE_STATUSES,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import {
  instanceStreamsOf,
  localOutputPath,
  locateOutput,
  outsideOutputMessage,
  requireTask,
} from "@chronolog/scheduler";
import type { Command } from "commander";
import { intervalArg } from "../args.js";
import { type DataDirOptions, dataDirOf } from "../data-dir.js";
import { CliError } from "../edge.js";
import { taskIdArg, withSession } from "../projection.js";

/** How often `--follow` looks for more output, and for the attempt's end in the log. */
const FILE_POLL_MS = 200;
const LOG_POLL_MS = 500;

const ENDED: ReadonlySet<AttemptView["status"]> = new Set([
  "success",
  "failed",
  "interrupted",
  "abandoned",
  "cancelled",
]);
/** An interval whose attempts are over: no retry is due. */
const SETTLED = TERMINAL_INSTANCE_STATUSES;

interface LogsOptions {
  interval?: string;
  attempt?: string;
  follow?: boolean;
}

/** Reads a file from an offset on, a chunk at a time, until its current end. */
class FileReader {
  offset = 0;
  readonly hash: Hash = createHash("sha256");
  private readonly buf = Buffer.alloc(64 * 1024);

  constructor(readonly path: string) {}

  /** Prints what was added since the last call. */
  drain(): void {
    const fd = openSync(this.path, "r");
    try {
      for (;;) {
        const n = readSync(fd, this.buf, 0, this.buf.length, this.offset);
        if (n === 0) return;
        const chunk = this.buf.subarray(0, n);
        this.hash.update(chunk);
        process.stdout.write(Buffer.from(chunk));
        this.offset += n;
      }
    } finally {
      closeSync(fd);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function describe(id: string, inst: InstanceState, a: AttemptView): string {
  return `${id} ${shortInstant(inst.logicalDate)} attempt ${a.attempt} (${a.token})`;
}

/**
 * Prints the output the attempt left, after its end. The file is checked against the size and
 * SHA-256 its end recorded; a file that does not match is reported, with exit code 5.
 */
function printEnded(reader: FileReader | undefined, a: AttemptView, what: string, dataDir: string): void {
  if (!reader) {
    printTails(a, what, dataDir);
    return;
  }
  reader.drain();
  const file = a.outputFile;
  if (!file) {
    process.stderr.write(
      `chronolog: ${what} ended ${a.status} without its worker closing the output file (${a.endReason ?? "no reason"}): what is above was kept, unchecked\n`,
    );
    return;
  }
  if (file.error) process.stderr.write(`chronolog: ${what}: the output file stops short: ${file.error}\n`);
  const sha256 = reader.hash.digest("hex");
  if (reader.offset !== file.bytes || sha256 !== file.sha256) {
    process.stderr.write(
      `chronolog: ${reader.path} does not match what ${what} recorded (${file.bytes} bytes, sha256 ${file.sha256}; read ${reader.offset} bytes, sha256 ${sha256}): it changed after the attempt ended\n`,
    );
    process.exitCode = 5;
  }
}

/** No file to print: the last 4 KiB of each stream that the attempt's end recorded, if any. */
function printTails(a: AttemptView, what: string, dataDir: string): void {
  // Its end recorded an output of nothing: there is nothing to print, wherever its file is.
  if (a.outputFile && a.outputFile.bytes === 0 && !a.outputFile.error) return;
  const recorded = a.outputFile?.path ?? a.outputPath;
  const found = locateOutput(a, dataDir);
  const where = recorded
    ? found && "outside" in found
      ? outsideOutputMessage(recorded, dataDir)
      : `its output file ${recorded} is not here (kept on the host of worker ${a.workerId ?? "unknown"}, never written because the attempt ended before it ran, or removed)`
    : ENDED.has(a.status)
      ? "its worker kept no output file"
      : "it has not started";
  if (!a.stdoutTail && !a.stderrTail) {
    process.stderr.write(`chronolog: ${what}: ${where}, and the log holds no output for it\n`);
    return;
  }
  process.stderr.write(`chronolog: ${what}: ${where}; the last lines the log holds:\n`);
  for (const [name, text] of [
    ["stdout", a.stdoutTail],
    ["stderr", a.stderrTail],
  ] as const) {
    if (text) process.stdout.write(`--- ${name}\n${text}${text.endsWith("\n") ? "" : "\n"}`);
  }
}

async function readInstance(log: EventLog, stream: string): Promise<InstanceState | undefined> {
  return foldInstance(await log.readStream(stream));
}

/**
 * Follows one interval's attempts as they run: the named one only, or (without `--attempt`) each
 * in turn until the interval settles, retries included.
 */
async function follow(
  log: EventLog,
  dataDir: string,
  id: string,
  stream: string,
  attemptNo: number | undefined,
): Promise<void> {
  let current: number | undefined = attemptNo;
  let waited = false;
  for (;;) {
    let inst = await readInstance(log, stream);
    const a =
      current === undefined ? inst?.attempts.at(-1) : inst?.attempts.find((x) => x.attempt === current);
    if (!inst || !a) {
      if (!waited) process.stderr.write(`chronolog: waiting for ${id} to start an attempt\n`);
      waited = true;
      await sleep(LOG_POLL_MS);
      continue;
    }
    const what = describe(id, inst, a);
    // Which attempt the lines below are from (stderr: stdout is the output alone).
    process.stderr.write(`--- ${what}\n`);
    current = a.attempt;
    let reader: FileReader | undefined;
    let view = a;
    let lastLogRead = 0;
    for (;;) {
      if (!reader) {
        const path = localOutputPath(view, dataDir);
        if (path) reader = new FileReader(path);
      }
      if (ENDED.has(view.status)) break;
      reader?.drain();
      await sleep(FILE_POLL_MS);
      if (Date.now() - lastLogRead >= LOG_POLL_MS) {
        lastLogRead = Date.now();
        inst = (await readInstance(log, stream)) ?? inst;
        view = inst.attempts.find((x) => x.attempt === current) ?? view;
      }
    }
    printEnded(reader, view, what, dataDir);
    if (attemptNo !== undefined) return;
    // Without --attempt, on to a retry until the interval settles.
    for (;;) {
      if (SETTLED.has(inst.status) || inst.attempts.some((x) => x.attempt > (current as number))) break;
      await sleep(LOG_POLL_MS);
      inst = (await readInstance(log, stream)) ?? inst;
    }
    if (SETTLED.has(inst.status) && !inst.attempts.some((x) => x.attempt > (current as number))) return;
    current = (current as number) + 1;
  }
}

export function registerLogsCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("logs")
    .description("print an attempt's whole output (stdout and stderr as they came), live with --follow")
    .argument("<task>", "project/account/name[/partition]")
    .option(
      "--interval <date>",
      "the interval's logical date, or a day: the interval that starts on it in the task's zone (default: the latest that ran)",
    )
    .option("--attempt <n>", "the attempt's number (default: the latest)")
    .option("-f, --follow", "keep printing while the attempt runs, and its retries after it")
    .action(async (key: string, opts: LogsOptions) => {
      const id = taskIdArg(key);
      const attemptNo = opts.attempt === undefined ? undefined : Number(opts.attempt);
      if (attemptNo !== undefined && (!Number.isInteger(attemptNo) || attemptNo < 1))
        throw new CliError(`--attempt takes an attempt number, 1 or more, not "${opts.attempt}"`, 2);
      const dataDir = dataDirOf(globals());
      await withSession(globals(), "read", async (s) => {
        const task = requireTask(s.projection, id);
        let stream: string | undefined;
        const interval = opts.interval === undefined ? undefined : intervalArg(opts.interval, task);
        if (interval !== undefined) {
          stream = instanceStream(task.key, interval);
        } else {
          // The latest interval that has an attempt.
          for (const st of (await instanceStreamsOf(s.log, task)).reverse()) {
            const inst = await readInstance(s.log, st);
            if (inst && inst.attempts.length > 0) {
              stream = st;
              break;
            }
          }
          if (!stream && !opts.follow) throw new CliError(`${id} has not run yet: no attempt has output`, 4);
          stream ??= instanceStream(task.key, task.logicalDate);
        }
        const inst = await readInstance(s.log, stream);
        if (!opts.follow) {
          if (!inst || inst.attempts.length === 0)
            throw new CliError(
              `${id} has no attempt for the interval ${shortInstant(interval ?? task.logicalDate)}`,
              4,
            );
          const a =
            attemptNo === undefined
              ? inst.attempts.at(-1)
              : inst.attempts.find((x) => x.attempt === attemptNo);
          if (!a)
            throw new CliError(
              `${id} ${shortInstant(inst.logicalDate)} has no attempt ${attemptNo} (attempts: 1 to ${inst.attempts.length})`,
              4,
            );
          const what = describe(id, inst, a);
          const path = localOutputPath(a, dataDir);
          const reader = path ? new FileReader(path) : undefined;
          if (ENDED.has(a.status)) printEnded(reader, a, what, dataDir);
          else {
            reader?.drain();
            process.stderr.write(
              `chronolog: ${what} is ${a.status}: its output so far (--follow for the rest)\n`,
            );
            if (!reader) printTails(a, what, dataDir);
          }
          return;
        }
        if (attemptNo !== undefined && inst && !inst.attempts.some((x) => x.attempt === attemptNo)) {
          // A later attempt may still come; an earlier number that is not there never will.
          if (attemptNo <= inst.attempts.length || SETTLED.has(inst.status))
            throw new CliError(`${id} ${shortInstant(inst.logicalDate)} has no attempt ${attemptNo}`, 4);
        }
        await follow(s.log, dataDir, id, stream, attemptNo);
      });
    });
}
