import { EventLog, type EventLogOptions } from "@chronolog/log";
import { KafkaBackend, type KafkaLogOptions } from "./kafka-backend.js";

export { KafkaBackend, type KafkaLogOptions } from "./kafka-backend.js";
export { ForeignRecordError } from "./record.js";

/**
 * Opens the log kept in a Kafka topic (created if missing): connects, and reads the topic to
 * its end before it resolves.
 */
export async function openKafkaLog(options: KafkaLogOptions & EventLogOptions): Promise<EventLog> {
  return new EventLog(await KafkaBackend.open(options), options);
}
export { KafkaMembership, type KafkaMembershipOptions } from "./membership.js";
export {
  connectionSettings,
  type KafkaSaslOptions,
  KafkaSecurityError,
  type KafkaSecurityOptions,
  type KafkaTlsOptions,
  kafkaSecurityFromEnv,
  SASL_MECHANISMS,
  type SaslMechanism,
  SECURITY_ENV,
} from "./security.js";
export { monotonicOf, SessionFence, type SessionFenceOptions } from "./session-fence.js";
