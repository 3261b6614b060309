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

-- The log. position is the rowid: strictly increasing in commit order, never reused.
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
