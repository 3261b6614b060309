import { createHash, type Hash } from "node:crypto";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { endianness } from "node:os";
import { dirname } from "node:path";
import { bytesColumn, type Column, type ColumnArray, float64Column, uint32Column } from "./column.js";
import { LogIndex } from "./log-index.js";
import type { DeciderState, RecordDecider } from "./record-decider.js";
import { HASH_BYTES, RecordTable } from "./record-table.js";
import { StreamTable } from "./stream-table.js";

/**
 * A checkpoint of a Kafka client's index, in one file: the columns as they are in memory, one
 * after another, then a line of JSON that says what they are (the header), its length (4 bytes)
 * and a SHA-256 of everything before (32 bytes). A new client reads it and reads the topic only
 * past `nextOffset`, instead of from offset 0; it checks the checkpoint against the topic first
 * (see index-check.ts).
 *
 * Sections, in order: per event its revision and the position before it in its stream (u32
 * each); per stream its last event's position and its name's length in bytes (u32 each); the
 * names (UTF-8); per record its offset and first position (f64 each) and the hash before it (32
 * bytes); the records not all of whose appends were accepted (JSON); the dedupe window (JSON).
 */
export interface IndexHeader {
  readonly format: typeof FORMAT;
  readonly version: typeof VERSION;
  readonly endian: "LE" | "BE";
  readonly topic: string;
  readonly nextOffset: string;
  readonly events: number;
  readonly streams: number;
  readonly records: number;
  readonly namesBytes: number;
  readonly masksBytes: number;
  readonly decidedBytes: number;
  readonly lastHash: string;
  readonly dedupeFloor: string;
  readonly refused: number;
  readonly duplicates: number;
}

const FORMAT = "chronolog-kafka-index";
const VERSION = 1;
const TRAILER = 4 + 32;
const PIECE = 1 << 20;

/** A checkpoint file that cannot be used, and why. */
export class IndexFileError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "IndexFileError";
  }
}

/**
 * Writes the decider's index and state to `path` (through a file beside it, renamed into place,
 * so a reader never sees half a checkpoint). What it writes is the decider as it is when the
 * call is made: the columns only grow, and what can change (each stream's last position) is
 * copied first. Returns what it wrote.
 */
export async function saveIndex(
  path: string,
  topic: string,
  decider: RecordDecider,
): Promise<{ bytes: number; nextOffset: bigint; events: number }> {
  // The snapshot: taken in one step, between two records.
  const index = decider.index;
  const state = decider.state();
  const s = index.streams.parts();
  const r = index.records.parts();
  const events = s.revision.length;
  const last = copy(s.last, s.streams);
  const masks = JSON.stringify(
    [...r.accepted].filter(([i]) => i < r.records).map(([i, m]) => [i, m.join("")]),
  );
  const decided = JSON.stringify(state.decided.map(([id, at]) => [id, at.toString()]));
  const lastHash = index.lastHash;
  const names = takeNames(s.names, s.streams);

  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  const fh = await open(temp, "w");
  const hash = createHash("sha256");
  let bytes = 0;
  const write = async (data: Uint8Array) => {
    hash.update(data);
    bytes += data.length;
    await fh.write(data);
  };
  try {
    for (const part of s.revision.parts(events)) await write(asBytes(part));
    for (const part of s.previous.parts(events)) await write(asBytes(part));
    await write(asBytes(last));
    const lengths = new Uint32Array(names.length);
    let namesBytes = 0;
    for (const [i, name] of names.entries()) {
      lengths[i] = Buffer.byteLength(name);
      namesBytes += lengths[i] as number;
    }
    await write(asBytes(lengths));
    let piece = "";
    for (const name of names) {
      piece += name;
      if (piece.length >= PIECE) {
        await write(Buffer.from(piece));
        piece = "";
      }
    }
    if (piece) await write(Buffer.from(piece));
    for (const part of r.offset.parts(r.records)) await write(asBytes(part));
    for (const part of r.first.parts(r.records)) await write(asBytes(part));
    for (const part of r.prevHash.parts(r.records * HASH_BYTES)) await write(asBytes(part));
    const masksBytes = Buffer.from(masks);
    const decidedBytes = Buffer.from(decided);
    await write(masksBytes);
    await write(decidedBytes);
    const header: IndexHeader = {
      format: FORMAT,
      version: VERSION,
      endian: endianness(),
      topic,
      nextOffset: state.next.toString(),
      events,
      streams: names.length,
      records: r.records,
      namesBytes,
      masksBytes: masksBytes.length,
      decidedBytes: decidedBytes.length,
      lastHash,
      dedupeFloor: state.dedupeFloor.toString(),
      refused: state.refused,
      duplicates: state.duplicates,
    };
    const headerBytes = Buffer.from(`${JSON.stringify(header)}\n`);
    await write(headerBytes);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(headerBytes.length);
    await write(length);
    await fh.write(hash.digest());
    bytes += 32;
    await fh.datasync();
    await fh.close();
    await rename(temp, path);
  } catch (error) {
    await fh.close().catch(() => {});
    await rm(temp, { force: true });
    throw error;
  }
  return { bytes, nextOffset: state.next, events };
}

/** What a checkpoint file holds, read back whole and checked against its own hash. */
export interface LoadedIndex {
  readonly header: IndexHeader;
  readonly index: LogIndex;
  readonly state: DeciderState;
}

/**
 * Reads a checkpoint written by saveIndex for `topic`. Throws IndexFileError (with the reason)
 * for a file that is not one, is damaged, was made for another topic or on a machine of the
 * other byte order.
 */
export async function loadIndex(path: string, topic: string): Promise<LoadedIndex> {
  const fh = await open(path, "r");
  try {
    const size = (await fh.stat()).size;
    if (size < TRAILER) throw new IndexFileError("the file is too short to be a checkpoint");
    const trailer = Buffer.alloc(TRAILER);
    await fh.read(trailer, 0, TRAILER, size - TRAILER);
    const headerLength = trailer.readUInt32LE(0);
    if (headerLength > size - TRAILER) throw new IndexFileError("the file is damaged (header length)");
    const headerBytes = Buffer.alloc(headerLength);
    await fh.read(headerBytes, 0, headerLength, size - TRAILER - headerLength);
    const header = parseHeader(headerBytes);
    if (header.topic !== topic)
      throw new IndexFileError(`it was made for topic ${header.topic}, not ${topic}`);
    if (header.endian !== endianness())
      throw new IndexFileError(`it was written on a ${header.endian} machine, this one is ${endianness()}`);
    const { events, streams, records } = header;
    const expected =
      events * 8 +
      streams * 8 +
      header.namesBytes +
      records * (16 + HASH_BYTES) +
      header.masksBytes +
      header.decidedBytes +
      headerLength +
      TRAILER;
    if (expected !== size) throw new IndexFileError(`the file is ${size} bytes, its header says ${expected}`);

    const reader = new SectionReader(fh);
    const revision = await reader.column(uint32Column(), events);
    const previous = await reader.column(uint32Column(), events);
    const last = await reader.column(uint32Column(), streams);
    const lengths = await reader.uint32s(streams);
    const names = await reader.names(lengths, header.namesBytes);
    const offset = await reader.column(float64Column(1 << 14), records);
    const first = await reader.column(float64Column(1 << 14), records);
    const prevHash = await reader.column(bytesColumn(HASH_BYTES << 12), records * HASH_BYTES);
    const masks = JSON.parse((await reader.bytes(header.masksBytes)).toString()) as Array<[number, string]>;
    const decided = JSON.parse((await reader.bytes(header.decidedBytes)).toString()) as Array<
      [string, string]
    >;
    reader.hash.update(headerBytes);
    reader.hash.update(trailer.subarray(0, 4));
    if (!reader.hash.digest().equals(trailer.subarray(4)))
      throw new IndexFileError("the file is damaged (its hash does not match its content)");

    const index = new LogIndex(
      StreamTable.from({ names, last, revision, previous }),
      RecordTable.from({
        offset,
        first,
        prevHash,
        accepted: new Map(masks.map(([i, m]) => [i, Uint8Array.from(m, (c) => Number(c))])),
      }),
      header.lastHash,
    );
    const state: DeciderState = {
      next: BigInt(header.nextOffset),
      decided: decided.map(([id, at]) => [id, BigInt(at)] as const),
      dedupeFloor: BigInt(header.dedupeFloor),
      refused: header.refused,
      duplicates: header.duplicates,
    };
    return { header, index, state };
  } catch (error) {
    if (error instanceof IndexFileError) throw error;
    throw new IndexFileError(`the file cannot be read: ${(error as Error).message}`);
  } finally {
    await fh.close();
  }
}

function parseHeader(bytes: Buffer): IndexHeader {
  let h: Partial<IndexHeader>;
  try {
    h = JSON.parse(bytes.toString()) as Partial<IndexHeader>;
  } catch {
    throw new IndexFileError("it is not a checkpoint of a Kafka log's index (no header)");
  }
  if (h?.format !== FORMAT) throw new IndexFileError("it is not a checkpoint of a Kafka log's index");
  if (h.version !== VERSION)
    throw new IndexFileError(`it is in layout ${String(h.version)}; this version reads layout ${VERSION}`);
  const whole = (n: unknown) => typeof n === "number" && Number.isInteger(n) && n >= 0;
  const decimal = (x: unknown) => typeof x === "string" && /^(0|[1-9][0-9]*)$/.test(x);
  if (
    !(
      typeof h.topic === "string" &&
      decimal(h.nextOffset) &&
      decimal(h.dedupeFloor) &&
      [
        h.events,
        h.streams,
        h.records,
        h.namesBytes,
        h.masksBytes,
        h.decidedBytes,
        h.refused,
        h.duplicates,
      ].every(whole) &&
      typeof h.lastHash === "string" &&
      /^([0-9a-f]{64})?$/.test(h.lastHash) &&
      (h.endian === "LE" || h.endian === "BE")
    )
  )
    throw new IndexFileError("its header is malformed");
  return h as IndexHeader;
}

/** Reads the sections of a checkpoint in order, hashing every byte. */
class SectionReader {
  readonly hash: Hash = createHash("sha256");
  private at = 0;

  constructor(private readonly fh: Awaited<ReturnType<typeof open>>) {}

  private async fill(into: Uint8Array): Promise<void> {
    let done = 0;
    while (done < into.length) {
      const { bytesRead } = await this.fh.read(into, done, into.length - done, this.at + done);
      if (bytesRead === 0) throw new IndexFileError("the file ends early");
      done += bytesRead;
    }
    this.at += into.length;
    this.hash.update(into);
  }

  /** `count` values into `column`, a chunk at a time through one buffer. */
  async column<A extends ColumnArray>(column: Column<A>, count: number): Promise<Column<A>> {
    if (count === 0) return column;
    const buffer = column.make(Math.min(count, column.chunkLength));
    for (let left = count; left > 0; ) {
      const n = Math.min(left, buffer.length);
      const part = buffer.subarray(0, n) as A;
      await this.fill(new Uint8Array(part.buffer, part.byteOffset, part.byteLength));
      column.pushAll(part);
      left -= n;
    }
    return column;
  }

  async uint32s(count: number): Promise<Uint32Array> {
    const out = new Uint32Array(count);
    await this.fill(asBytes(out));
    return out;
  }

  async bytes(length: number): Promise<Buffer> {
    const b = Buffer.alloc(length);
    await this.fill(b);
    return b;
  }

  /** The stream names, `lengths[i]` bytes each, read a piece at a time. */
  async names(lengths: Uint32Array, total: number): Promise<string[]> {
    const out = new Array<string>(lengths.length);
    let buffer = Buffer.alloc(0);
    let used = 0;
    let left = total;
    for (let i = 0; i < lengths.length; i++) {
      const n = lengths[i] as number;
      if (used + n > buffer.length) {
        const more = Buffer.alloc(Math.min(left, Math.max(PIECE, n)));
        await this.fill(more);
        left -= more.length;
        buffer = Buffer.concat([buffer.subarray(used), more]);
        used = 0;
        if (n > buffer.length) throw new IndexFileError("the stream names are cut short");
      }
      out[i] = buffer.toString("utf8", used, used + n);
      used += n;
    }
    if (left !== 0 || used !== buffer.length)
      throw new IndexFileError("the stream names do not fill their section");
    return out;
  }
}

function asBytes(a: ColumnArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function copy(column: Column<Uint32Array>, length: number): Uint32Array {
  const out = new Uint32Array(length);
  let at = 0;
  for (const part of column.parts(length)) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The first `count` names, taken now: the names that follow may still be added to. */
function takeNames(names: Iterable<string>, count: number): string[] {
  const out = new Array<string>(count);
  let i = 0;
  for (const name of names) {
    if (i >= count) break;
    out[i++] = name;
  }
  return out;
}
