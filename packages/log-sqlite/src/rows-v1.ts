import type { StoredEvent } from "@chronolog/log";
import type Database from "better-sqlite3";
import type { EventRows, NewRow } from "./rows.js";

interface Row {
  position: bigint;
  name: string;
  revision: bigint;
  type: string;
  version: bigint;
  data: string;
  event_id: string;
  actor: string;
  causation_id: string | null;
  correlation_id: string | null;
  recorded_at: string;
  prev_hash: Buffer;
  hash: Buffer;
}

const SELECT = `SELECT e.position, s.name, e.revision, e.type, e.version, e.data, e.event_id, e.actor,
  e.causation_id, e.correlation_id, e.recorded_at, e.prev_hash, e.hash
  FROM events e JOIN streams s ON s.sid = e.sid`;

function toStored(row: Row): StoredEvent {
  return {
    streamId: row.name,
    revision: row.revision,
    position: row.position,
    type: row.type,
    dataJson: row.data,
    metadata: {
      eventId: row.event_id,
      actor: row.actor,
      causationId: row.causation_id,
      correlationId: row.correlation_id,
      schemaVersion: Number(row.version),
      recordedAt: row.recorded_at,
      prevHash: row.prev_hash.toString("hex"),
      hash: row.hash.toString("hex"),
    },
  };
}

/** Layout 1: every field as its text, each event's previous hash stored beside its own. */
export class RowsV1 implements EventRows {
  readonly version = 1;
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      sidOf: db.prepare("SELECT sid FROM streams WHERE name = ?").pluck(),
      insertStream: db.prepare("INSERT INTO streams(name) VALUES (?)"),
      insertEvent:
        db.prepare(`INSERT INTO events(position, sid, revision, type, version, data, event_id, actor,
        causation_id, correlation_id, recorded_at, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`),
      readStream: db.prepare(
        `${SELECT} WHERE e.sid = (SELECT sid FROM streams WHERE name = ?) AND e.revision >= ? ORDER BY e.revision LIMIT ?`,
      ),
      readAll: db.prepare(`${SELECT} WHERE e.position >= ? ORDER BY e.position LIMIT ?`),
    };
  }

  sidOf(name: string): bigint | undefined {
    return this.stmts.sidOf.get(name) as bigint | undefined;
  }

  insertStream(name: string): bigint {
    return this.stmts.insertStream.run(name).lastInsertRowid as bigint;
  }

  commitTime(recordedAt: string): unknown {
    return recordedAt;
  }

  insertEvent(r: NewRow): void {
    const e = r.event;
    this.stmts.insertEvent.run(
      r.position,
      r.sid,
      r.revision,
      e.type,
      e.schemaVersion,
      e.dataJson,
      e.eventId,
      e.actor,
      e.causationId,
      e.correlationId,
      r.recordedAt,
      r.prevHash,
      r.hash,
    );
  }

  readStream(name: string, fromRevision: bigint, maxCount: number): StoredEvent[] {
    return (this.stmts.readStream.all(name, fromRevision, BigInt(maxCount)) as Row[]).map(toStored);
  }

  readAll(fromPosition: bigint, maxCount: number): StoredEvent[] {
    return (this.stmts.readAll.all(fromPosition, BigInt(maxCount)) as Row[]).map(toStored);
  }

  rolledBack(): void {}
}
