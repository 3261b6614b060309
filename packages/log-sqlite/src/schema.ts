/**
 * Versions of the on-disk layout, kept in `meta` under `layout_version`. A new file takes the
 * latest; a file keeps the layout it was made with, and every layout here is read and written.
 */
export const LAYOUT_VERSIONS = [1, 2] as const;
export type LayoutVersion = (typeof LAYOUT_VERSIONS)[number];
export const LATEST_LAYOUT: LayoutVersion = 2;

const META = `
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
`;

/** The triggers by which the engine itself refuses to change or remove what was written. */
const appendOnly = (table: string, what: string) => `
CREATE TRIGGER IF NOT EXISTS ${table}_no_update BEFORE UPDATE ON ${table}
BEGIN SELECT RAISE(ABORT, 'chronolog: ${what} are append-only (UPDATE refused)'); END;
CREATE TRIGGER IF NOT EXISTS ${table}_no_delete BEFORE DELETE ON ${table}
BEGIN SELECT RAISE(ABORT, 'chronolog: ${what} are append-only (DELETE refused)'); END;
`;

/** Layout 1: every field as the text the writer gave, and each event's previous hash beside its own. */
const SCHEMA_1 = `${META}
-- Stream names interned to small integers, so the (stream, revision) index stays compact.
CREATE TABLE IF NOT EXISTS streams (
  sid  INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);

-- The log. position is the rowid: strictly increasing in commit order, never reused, dense from
-- the file's first position (meta 'first_position').
CREATE TABLE IF NOT EXISTS events (
  position       INTEGER PRIMARY KEY,
  sid            INTEGER NOT NULL REFERENCES streams(sid),
  revision       INTEGER NOT NULL,
  type           TEXT NOT NULL,
  version        INTEGER NOT NULL,
  data           TEXT NOT NULL,
  event_id       TEXT NOT NULL,
  actor          TEXT NOT NULL,
  causation_id   TEXT,
  correlation_id TEXT,
  recorded_at    TEXT NOT NULL,
  prev_hash      BLOB NOT NULL,
  hash           BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_stream ON events(sid, revision);
${appendOnly("events", "events")}${appendOnly("streams", "streams")}`;

/**
 * Layout 2: the same fields in compact forms, each of which reads back to exactly the text the
 * writer gave (see compact.ts), and no stored previous hash (it is the hash of the event at the
 * position before). The columns without a declared type keep whichever form was written: the
 * compact one, or the text itself when a value does not have the usual shape.
 */
const SCHEMA_2 = `${META}
-- Stream names (coded with the dictionary) interned to small integers.
CREATE TABLE IF NOT EXISTS streams (
  sid  INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);

-- Event types and actors interned to small integers.
CREATE TABLE IF NOT EXISTS names (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);

-- The log. position is the rowid: strictly increasing in commit order, never reused, dense from 0.
--   type, actor     names.id (or the name's text)
--   data            the JSON coded with the dictionary (or the text as it is, or its bytes)
--   event_id, causation_id, correlation_id
--                   a UUID's 16 bytes (or the id's text)
--   recorded_at     milliseconds since 1970 (or the ISO-8601 text)
--   hash            SHA-256 over the previous event's hash and this event's fields as written
CREATE TABLE IF NOT EXISTS events (
  position       INTEGER PRIMARY KEY,
  sid            INTEGER NOT NULL,
  revision       INTEGER NOT NULL,
  type           NOT NULL,
  version        INTEGER NOT NULL,
  data           NOT NULL,
  event_id       NOT NULL,
  actor          NOT NULL,
  causation_id,
  correlation_id,
  recorded_at    NOT NULL,
  hash           BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_stream ON events(sid, revision);
${appendOnly("events", "events")}${appendOnly("streams", "streams")}${appendOnly("names", "names")}`;

export const SCHEMAS: Readonly<Record<LayoutVersion, string>> = { 1: SCHEMA_1, 2: SCHEMA_2 };

/**
 * Sets the position a file's first event takes, once: '0' for a file that holds no events yet;
 * '1' for a file that already holds events but no such key, which was written when the
 * embedded log numbered from 1 (its events' hashes cover those positions, and checkpoints and
 * snapshots refer to them, so it keeps that numbering). One statement: nothing can append
 * between the look at `events` and the insert.
 */
export const SET_FIRST_POSITION = `
INSERT INTO meta(key, value)
  SELECT 'first_position', CASE WHEN EXISTS (SELECT 1 FROM events) THEN '1' ELSE '0' END WHERE true
  ON CONFLICT(key) DO NOTHING
`;
