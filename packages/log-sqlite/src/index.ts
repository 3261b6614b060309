import { EventLog, type EventLogOptions } from "@chronolog/log";
import { SqliteBackend, type SqliteLogOptions } from "./sqlite-backend.js";

export { LATEST_LAYOUT, LAYOUT_VERSIONS, type LayoutVersion } from "./schema.js";
export { SqliteBackend, type SqliteLogOptions } from "./sqlite-backend.js";

/** Opens the embedded log at `options.path` (created if missing). */
export function openSqliteLog(options: SqliteLogOptions & EventLogOptions): EventLog {
  return new EventLog(new SqliteBackend(options), options);
}
