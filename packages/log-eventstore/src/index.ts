import { EventLog, type EventLogOptions } from "@chronolog/log";
import { EventStoreBackend, type EventStoreLogOptions } from "./eventstore-backend.js";

export { EventStoreBackend, type EventStoreLogOptions, parseEventStoreUrl } from "./eventstore-backend.js";
export { APPEND_TYPE, ForeignEventError } from "./record.js";

/**
 * Opens the log kept in one EventStoreDB stream: connects, and reads the stream to its end
 * before it resolves.
 */
export async function openEventStoreLog(options: EventStoreLogOptions & EventLogOptions): Promise<EventLog> {
  return new EventLog(await EventStoreBackend.open(options), options);
}
