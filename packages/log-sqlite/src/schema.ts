/** Version of the on-disk layout, kept in `meta` so a later layout can migrate an older file. */
export const LAYOUT_VERSION = 1;

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

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

-- Append-only: the engine itself refuses to change or remove an event or a stream.
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'chronolog: events are append-only (UPDATE refused)'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'chronolog: events are append-only (DELETE refused)'); END;
CREATE TRIGGER IF NOT EXISTS streams_no_update BEFORE UPDATE ON streams
BEGIN SELECT RAISE(ABORT, 'chronolog: streams are append-only (UPDATE refused)'); END;
CREATE TRIGGER IF NOT EXISTS streams_no_delete BEFORE DELETE ON streams
BEGIN SELECT RAISE(ABORT, 'chronolog: streams are append-only (DELETE refused)'); END;
`;

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
