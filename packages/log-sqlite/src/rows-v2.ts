import { GENESIS_HASH, type StoredEvent } from "@chronolog/log";
import type Database from "better-sqlite3";
import { decodeText, encodeText, packId, packInstant, unpackId, unpackInstant } from "./compact.js";
import type { EventRows, NewRow } from "./rows.js";

type Stored<T> = T | Buffer;

interface Row {
  position: bigint;
  name: string;
  revision: bigint;
  type: bigint | string;
  version: bigint;
  data: Stored<string>;
  event_id: Stored<string>;
  actor: bigint | string;
  causation_id: Stored<string> | null;
  correlation_id: Stored<string> | null;
  recorded_at: bigint | string;
  hash: Stored<string>;
  /** The hash of the event at the position before, where the statement reads it. */
  prev_hash?: Stored<string> | null;
}

const SELECT = `SELECT e.position, s.name, e.revision, e.type, e.version, e.data, e.event_id, e.actor,
  e.causation_id, e.correlation_id, e.recorded_at, e.hash`;

/** A text column that holds the coded text, or the bytes of a text that could not be coded. */
const packText = (text: string): string | Buffer => encodeText(text) ?? Buffer.from(text, "utf8");
const unpackText = (stored: Stored<string>): string =>
  typeof stored === "string" ? decodeText(stored) : stored.toString("utf8");
/** A hash as its 32 bytes (a value that is not one, as a tamperer may leave, as its text). */
const hashText = (stored: Stored<string>): string =>
  typeof stored === "string" ? stored : stored.toString("hex");

/**
 * Layout 2: the fields in compact forms (see schema.ts and compact.ts), every one of which
 * reads back to exactly what the writer gave: a completed no-op instance takes about half the
 * bytes of layout 1.
 */
export class RowsV2 implements EventRows {
  readonly version = 2;
  private readonly stmts;
  /** Interned names (event types, actors) both ways; ids never change and names are never removed. */
  private readonly ids = new Map<string, bigint>();
  private readonly names = new Map<bigint, string>();

  constructor(db: Database.Database) {
    this.stmts = {
      sidOf: db.prepare("SELECT sid FROM streams WHERE name = ?").pluck(),
      insertStream: db.prepare("INSERT INTO streams(name) VALUES (?)"),
      idOf: db.prepare("SELECT id FROM names WHERE name = ?").pluck(),
      nameOf: db.prepare("SELECT name FROM names WHERE id = ?").pluck(),
      insertName: db.prepare("INSERT INTO names(name) VALUES (?)"),
      hashAt: db.prepare("SELECT hash FROM events WHERE position = ?").pluck(),
      insertEvent:
        db.prepare(`INSERT INTO events(position, sid, revision, type, version, data, event_id, actor,
        causation_id, correlation_id, recorded_at, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`),
      readStream: db.prepare(
        `${SELECT}, (SELECT p.hash FROM events p WHERE p.position = e.position - 1) AS prev_hash
        FROM events e JOIN streams s ON s.sid = e.sid
        WHERE e.sid = (SELECT sid FROM streams WHERE name = ?) AND e.revision >= ? ORDER BY e.revision LIMIT ?`,
      ),
      readAll: db.prepare(
        `${SELECT} FROM events e JOIN streams s ON s.sid = e.sid WHERE e.position >= ? ORDER BY e.position LIMIT ?`,
      ),
    };
  }

  sidOf(name: string): bigint | undefined {
    return this.stmts.sidOf.get(this.codedName(name)) as bigint | undefined;
  }

  insertStream(name: string): bigint {
    return this.stmts.insertStream.run(this.codedName(name)).lastInsertRowid as bigint;
  }

  /** The last stream name coded, and its coded form: a new stream is looked up, then inserted. */
  private lastName = "";
  private lastCoded = "";

  /** A stream name as the `streams` table holds it (coded with the dictionary). */
  private codedName(name: string): string {
    if (name !== this.lastName) {
      this.lastCoded = encodeText(name) ?? name;
      this.lastName = name;
    }
    return this.lastCoded;
  }

  commitTime(recordedAt: string): unknown {
    return packInstant(recordedAt);
  }

  /** Where an event's ids are packed for their columns, reused: SQLite copies a value it binds. */
  private readonly idBytes = {
    event: Buffer.alloc(16),
    causation: Buffer.alloc(16),
    correlation: Buffer.alloc(16),
  };

  insertEvent(r: NewRow): void {
    const e = r.event;
    const ids = this.idBytes;
    this.stmts.insertEvent.run(
      r.position,
      r.sid,
      r.revision,
      this.idOf(e.type),
      e.schemaVersion,
      packText(e.dataJson),
      packId(e.eventId, ids.event),
      this.idOf(e.actor),
      e.causationId === null ? null : packId(e.causationId, ids.causation),
      e.correlationId === null ? null : packId(e.correlationId, ids.correlation),
      r.recordedAt,
      r.hash,
    );
  }

  readStream(name: string, fromRevision: bigint, maxCount: number): StoredEvent[] {
    const rows = this.stmts.readStream.all(encodeText(name) ?? name, fromRevision, BigInt(maxCount)) as Row[];
    return rows.map((row) => this.toStored(row, this.prevOf(row)));
  }

  readAll(fromPosition: bigint, maxCount: number): StoredEvent[] {
    const rows = this.stmts.readAll.all(fromPosition, BigInt(maxCount)) as Row[];
    const out: StoredEvent[] = new Array(rows.length);
    let before: Row | undefined;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as Row;
      // The previous event is the row before, unless the positions have a gap (a damaged file).
      const prev =
        before !== undefined && before.position + 1n === row.position
          ? hashText(before.hash)
          : this.hashBefore(row.position);
      out[i] = this.toStored(row, prev);
      before = row;
    }
    return out;
  }

  rolledBack(): void {
    this.ids.clear();
  }

  /** The previous hash of a row read with its predecessor's hash beside it. */
  private prevOf(row: Row): string {
    if (row.position === 0n) return GENESIS_HASH;
    return row.prev_hash === null || row.prev_hash === undefined ? GENESIS_HASH : hashText(row.prev_hash);
  }

  /**
   * The hash of the event before `position`: the chain's start (GENESIS_HASH) before position 0,
   * and also where that event is missing, which verification then reports as a break.
   */
  private hashBefore(position: bigint): string {
    if (position === 0n) return GENESIS_HASH;
    const stored = this.stmts.hashAt.get(position - 1n) as Stored<string> | undefined;
    return stored === undefined ? GENESIS_HASH : hashText(stored);
  }

  private toStored(row: Row, prevHash: string): StoredEvent {
    return {
      streamId: decodeText(row.name),
      revision: row.revision,
      position: row.position,
      type: this.nameOf(row.type),
      dataJson: unpackText(row.data),
      metadata: {
        eventId: unpackId(row.event_id),
        actor: this.nameOf(row.actor),
        causationId: row.causation_id === null ? null : unpackId(row.causation_id),
        correlationId: row.correlation_id === null ? null : unpackId(row.correlation_id),
        schemaVersion: Number(row.version),
        recordedAt: unpackInstant(row.recorded_at),
        prevHash,
        hash: hashText(row.hash),
      },
    };
  }

  /** The id of an event type or actor, interned on first use (in the transaction under way). */
  private idOf(name: string): bigint {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = (this.stmts.idOf.get(name) as bigint | undefined) ?? this.insertName(name);
      this.ids.set(name, id);
    }
    return id;
  }

  private insertName(name: string): bigint {
    return this.stmts.insertName.run(name).lastInsertRowid as bigint;
  }

  private nameOf(stored: bigint | string): string {
    if (typeof stored === "string") return stored;
    let name = this.names.get(stored);
    if (name === undefined) {
      name = this.stmts.nameOf.get(stored) as string | undefined;
      if (name === undefined) return `(unknown name ${stored})`;
      this.names.set(stored, name);
    }
    return name;
  }
}
