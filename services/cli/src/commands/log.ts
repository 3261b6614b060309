import { readFileSync } from "node:fs";
import { counted } from "@chronolog/core";
import {
  type ExpectedRevision,
  exportLine,
  GENESIS_HASH,
  type RecordedEvent,
  type StoredEvent,
  verifyExportText,
} from "@chronolog/log";
import type { Command } from "commander";
import {
  anchorLine,
  checkExpectations,
  type Expectation,
  type ExpectationOutcome,
  headEvent,
  parseExpect,
  readAnchors,
  writeAnchor,
} from "../audit.js";
import { type DataDirOptions, defaultActor, openLogForRead, openLogForWrite } from "../data-dir.js";
import { CliError, toJson } from "../edge.js";
import { eventLine } from "../event-line.js";

function parseExpected(text: string): ExpectedRevision {
  if (text === "any" || text === "no_stream" || text === "exists") return text;
  if (/^\d+$/.test(text)) return BigInt(text);
  throw new CliError(`--expected-revision: "${text}" is not any, no_stream, exists or a revision number`, 2);
}

function parseBigint(name: string, text: string): bigint {
  if (!/^\d+$/.test(text)) throw new CliError(`${name}: "${text}" is not a non-negative integer`, 2);
  return BigInt(text);
}

/**
 * An event as `log read` prints it: as a readable line (eventLine); stored data that is not
 * upcast (`--raw`) as it is stored, its type and data as JSON.
 */
function formatLine(e: StoredEvent | RecordedEvent): string {
  if ("data" in e) return eventLine(e);
  return `${String(e.position).padStart(8)}  ${e.metadata.recordedAt}  ${e.type}  ${e.streamId}@${e.revision}  ${e.metadata.actor}  ${e.dataJson}`;
}

export function registerLogCommands(program: Command, globals: () => DataDirOptions): void {
  const log = program
    .command("log")
    .description("the event log itself: append, read, tail, verify, anchor, export");

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
          if (events.length === 0 && !opts.json) {
            const head = stream ? 0n : await eventLog.headPosition();
            console.log(
              stream
                ? `no events in stream ${stream} from revision ${from}`
                : head < 0n
                  ? "no events: the log is empty"
                  : `no events from position ${from} (the log's head is at ${head})`,
            );
          }
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
                `${counted(events.length, "event")} shown, up to ${where}: --limit N to see more, or --from ${next} for the next ones\n`,
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
      const head = await eventLog.headPosition();
      const fromPosition = opts.from !== undefined ? parseBigint("--from", opts.from) : head + 1n;
      // Where it follows from, on stderr: standard output is the events alone (one JSON a line with --json).
      process.stderr.write(
        `following the log from position ${fromPosition} (${head < 0n ? "the log is empty" : `the head is at ${head}`}; Ctrl-C to stop)\n`,
      );
      const sub = eventLog.subscribe((e) => void console.log(opts.json ? toJson(e) : eventLine(e)), {
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
    .description(
      "walk the log (or, with --file, an export) and check its hash chain, and what an auditor kept of it",
    )
    .option(
      "--expect <position:hash>",
      "the log must still hold this event with this hash (repeatable)",
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option("--anchors <file>", "check every POSITION HASH TIME line of an anchor file (log anchor)")
    .option("--json", "print the result as JSON")
    .action(async (opts: { expect: string[]; anchors?: string; json?: boolean }) => {
      const g = globals();
      const expectations = [
        ...opts.expect.map(parseExpect),
        ...(opts.anchors !== undefined ? readAnchors(opts.anchors) : []),
      ];
      const outcome =
        g.file !== undefined ? verifyFile(g.file, expectations) : await verifyLive(g, expectations);
      const failed = outcome.expectations.filter((x) => !x.ok);
      if (opts.json) console.log(toJson({ ...outcome, ok: outcome.break === null && failed.length === 0 }));
      else {
        const b = outcome.break;
        if (outcome.from)
          console.log(
            `the export starts at position ${outcome.from.position}: its chain is checked from that event's prev_hash ${outcome.from.prevHash || "(none)"}, not from the log's start`,
          );
        if (b) {
          const line = b.line !== undefined ? `line ${b.line}, ` : "";
          console.log(
            `chain broken at ${line}position ${b.position ?? "(unknown)"}: ${b.reason}\n(${counted(outcome.checked, "event")} before it verified)`,
          );
        } else
          console.log(
            `ok: ${counted(outcome.checked, "event")} verified, head at position ${outcome.headPosition}, hash ${outcome.headHash || "(none)"}`,
          );
        for (const x of failed) console.log(`${x.source}: position ${x.position}: ${x.reason}`);
        if (expectations.length > 0 && failed.length === 0)
          console.log(`ok: ${counted(expectations.length, "expected event")} held`);
      }
      if (outcome.break || failed.length > 0) process.exitCode = 5;
    });

  log
    .command("anchor")
    .description("print the log's head as a line POSITION HASH TIME, or append it to an anchor file")
    .option("--to <file>", "append the line to this file (created if missing) instead of printing it")
    .action(async (opts: { to?: string }) => {
      const eventLog = await openLogForRead(globals());
      try {
        if (opts.to !== undefined) {
          const line = await writeAnchor(eventLog, opts.to);
          if (!line) throw new CliError("the log is empty: there is nothing to anchor", 4);
          console.log(`anchored in ${opts.to}: ${line}`);
        } else {
          const head = await headEvent(eventLog);
          if (!head) throw new CliError("the log is empty: there is nothing to anchor", 4);
          console.log(anchorLine(head, new Date()));
        }
      } finally {
        await eventLog.close();
      }
    });

  log
    .command("export")
    .description("write the stored events, one JSON object a line, for an auditor (log verify --file)")
    .option("--from <position>", "first position (default: the log's start)")
    .option("--to <position>", "last position, inclusive (default: the log's head as the export begins)")
    .action(async (opts: { from?: string; to?: string }) => {
      const from = opts.from !== undefined ? parseBigint("--from", opts.from) : 0n;
      const to = opts.to !== undefined ? parseBigint("--to", opts.to) : null;
      if (to !== null && to < from) throw new CliError(`--to ${to} is before --from ${from}`, 2);
      const eventLog = await openLogForRead(globals());
      try {
        const last = to ?? (await eventLog.headPosition());
        for (let at = from; at <= last; ) {
          const page = await eventLog.readAllStored({ fromPosition: at, maxCount: 1000 });
          let text = "";
          for (const e of page) if (e.position <= last) text += exportLine(e);
          if (text !== "" && !process.stdout.write(text))
            await new Promise((r) => process.stdout.once("drain", r));
          const end = page.at(-1);
          if (!end) break;
          at = end.position + 1n;
        }
      } finally {
        await eventLog.close();
      }
    });
}

interface VerifyOutcome {
  readonly checked: number;
  readonly headPosition: bigint;
  readonly headHash: string;
  readonly break: {
    readonly position: bigint | null;
    readonly reason: string;
    readonly line?: number;
  } | null;
  /** An export that does not start at the log's start: where its chain is checked from. */
  readonly from?: { readonly position: bigint; readonly prevHash: string };
  readonly expectations: ExpectationOutcome[];
}

async function verifyLive(g: DataDirOptions, expectations: readonly Expectation[]): Promise<VerifyOutcome> {
  const eventLog = await openLogForRead(g);
  try {
    const result = await eventLog.verify();
    const [head] =
      result.headPosition >= 0n
        ? await eventLog.readAllStored({ fromPosition: result.headPosition, maxCount: 1 })
        : [];
    const last = await eventLog.headPosition();
    const checkedExpectations = await checkExpectations(expectations, {
      at: async (p) => {
        const [e] = await eventLog.readAllStored({ fromPosition: p, maxCount: 1 });
        return e && e.position === p ? e : null;
      },
      first: null,
      last,
      what: "the log",
    });
    return {
      checked: result.checked,
      headPosition: result.headPosition,
      headHash: result.break ? "" : (head?.metadata.hash ?? ""),
      break: result.break,
      expectations: checkedExpectations,
    };
  } finally {
    await eventLog.close();
  }
}

function verifyFile(path: string, expectations: readonly Expectation[]): VerifyOutcome {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(`--file ${path}: ${(error as Error).message}`, 2);
  }
  const { result, events } = verifyExportText(text);
  const first = result.firstPosition;
  const byPosition = (p: bigint) => (first === null || p < first ? undefined : events[Number(p - first)]);
  // Expectations are checked against the events verified (up to a break, if there is one).
  const outcomes: ExpectationOutcome[] = expectations.map((x) => {
    const e = byPosition(x.position);
    const reason = !e
      ? `missing: ${
          first === null
            ? "the export holds no verified event"
            : x.position < first
              ? `the export starts at position ${first}`
              : `the export's verified events end at position ${result.headPosition}`
        }`
      : e.metadata.hash !== x.hash
        ? `different hash: expected ${x.hash}, found ${e.metadata.hash}`
        : null;
    return { ...x, ok: reason === null, reason };
  });
  const from =
    first !== null && result.startHash !== GENESIS_HASH
      ? { position: first, prevHash: result.startHash }
      : null;
  return {
    checked: result.checked,
    headPosition: result.headPosition,
    headHash: result.headHash,
    break: result.break,
    ...(from ? { from } : {}),
    expectations: outcomes,
  };
}
