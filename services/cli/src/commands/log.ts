import type { ExpectedRevision, RecordedEvent, StoredEvent } from "@chronolog/log";
import type { Command } from "commander";
import { type DataDirOptions, defaultActor, openLogForRead, openLogForWrite } from "../data-dir.js";
import { CliError, toJson } from "../edge.js";

function parseExpected(text: string): ExpectedRevision {
  if (text === "any" || text === "no_stream" || text === "exists") return text;
  if (/^\d+$/.test(text)) return BigInt(text);
  throw new CliError(`--expected-revision: "${text}" is not any, no_stream, exists or a revision number`, 2);
}

function parseBigint(name: string, text: string): bigint {
  if (!/^\d+$/.test(text)) throw new CliError(`${name}: "${text}" is not a non-negative integer`, 2);
  return BigInt(text);
}

function formatLine(e: StoredEvent | RecordedEvent): string {
  const data = "data" in e ? toJson(e.data) : e.dataJson;
  return `${String(e.position).padStart(8)}  ${e.metadata.recordedAt}  ${e.streamId}@${e.revision}  ${e.type}  ${data}  (${e.metadata.actor})`;
}

export function registerLogCommands(program: Command, globals: () => DataDirOptions): void {
  const log = program.command("log").description("the event log itself: append, read, tail, verify");

  log
    .command("append")
    .description("append one event to a stream (validated against the event catalog)")
    .argument("<stream>", "stream name, e.g. note-ops")
    .requiredOption("-t, --type <type>", "event type from the catalog, e.g. Note")
    .requiredOption("-d, --data <json>", "event data as JSON")
    .option("-e, --expected-revision <rev>", "any | no_stream | exists | N", "any")
    .option("--actor <actor>", "who is writing (default: cli:USER@HOST:PID)")
    .option("--json", "print the result as JSON")
    .action(
      async (
        stream: string,
        opts: { type: string; data: string; expectedRevision: string; actor?: string; json?: boolean },
      ) => {
        let data: unknown;
        try {
          data = JSON.parse(opts.data);
        } catch (error) {
          throw new CliError(`--data is not valid JSON: ${(error as Error).message}`, 2);
        }
        const expectedRevision = parseExpected(opts.expectedRevision);
        const eventLog = await openLogForWrite(globals(), opts.actor ?? defaultActor("cli"));
        try {
          const r = await eventLog.append(stream, [{ type: opts.type, data }], { expectedRevision });
          if (opts.json)
            console.log(toJson({ stream, revision: r.nextExpectedRevision, position: r.position }));
          else
            console.log(
              `appended ${opts.type} to ${stream} at revision ${r.nextExpectedRevision}, position ${r.position}`,
            );
        } finally {
          await eventLog.close();
        }
      },
    );

  log
    .command("read")
    .description("read events: one stream, or the whole log from a position")
    .argument("[stream]", "a stream name; omit to read all streams")
    .option("--from <n>", "first position (whole log) or revision (one stream)", "0")
    .option("-n, --limit <n>", "most events to print", "100")
    .option("--raw", "print the stored data without upcasting")
    .option("--json", "print one JSON object per line")
    .action(
      async (
        stream: string | undefined,
        opts: { from: string; limit: string; raw?: boolean; json?: boolean },
      ) => {
        const from = parseBigint("--from", opts.from);
        const limit = Number(parseBigint("--limit", opts.limit));
        const eventLog = await openLogForRead(globals());
        try {
          const events: Array<StoredEvent | RecordedEvent> = stream
            ? await eventLog.readStream(stream, { fromRevision: from, maxCount: limit })
            : opts.raw
              ? await eventLog.readAllStored({ fromPosition: from, maxCount: limit })
              : await eventLog.readAll({ fromPosition: from, maxCount: limit });
          for (const e of events) console.log(opts.json ? toJson(e) : formatLine(e));
          // At the limit with more to read: say so (on stderr, so that --json stays one event a line).
          if (events.length === limit && limit > 0) {
            const last = events.at(-1) as { position: bigint; revision: bigint };
            const more = stream
              ? (await eventLog.readStream(stream, { fromRevision: last.revision + 1n, maxCount: 1 }))
                  .length > 0
              : (await eventLog.headPosition()) > last.position;
            if (more) {
              const where = stream
                ? `revision ${last.revision}; the stream is at revision ${String(await eventLog.streamRevision(stream))}`
                : `position ${last.position}; the log's head is at ${await eventLog.headPosition()}`;
              const next = stream ? last.revision + 1n : last.position + 1n;
              process.stderr.write(
                `${events.length} events shown, up to ${where}: --limit N to see more, or --from ${next} for the next ones\n`,
              );
            }
          }
        } finally {
          await eventLog.close();
        }
      },
    );

  log
    .command("tail")
    .description("print events as they are appended (Ctrl-C to stop)")
    .option("--from <n>", "start position (default: the current end of the log)")
    .option("--json", "print one JSON object per line")
    .action(async (opts: { from?: string; json?: boolean }) => {
      const eventLog = await openLogForRead(globals());
      const fromPosition =
        opts.from !== undefined ? parseBigint("--from", opts.from) : (await eventLog.headPosition()) + 1n;
      const sub = eventLog.subscribe((e) => void console.log(opts.json ? toJson(e) : formatLine(e)), {
        fromPosition,
      });
      const stop = async () => {
        await sub.close();
        await eventLog.close();
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      await sub.done;
    });

  log
    .command("verify")
    .description("walk the log and check its hash chain; report the first position where it breaks")
    .option("--json", "print the result as JSON")
    .action(async (opts: { json?: boolean }) => {
      const eventLog = await openLogForRead(globals());
      try {
        const result = await eventLog.verify();
        if (opts.json) console.log(toJson(result));
        else if (result.break) {
          console.log(`chain broken at position ${result.break.position}: ${result.break.reason}`);
          console.log(`(${result.checked} events before it verified)`);
        } else console.log(`ok: ${result.checked} events verified, head at position ${result.headPosition}`);
        if (result.break) process.exitCode = 5;
      } finally {
        await eventLog.close();
      }
    });
}
