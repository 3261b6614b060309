import { LogUnavailableError } from "@chronolog/log";
import type { Cluster, Kafka } from "kafkajs";
import { sleep } from "./client.js";
import type { RawRecord, RecordSource } from "./event-reader.js";

/** Only committed records, as the follower reads them. */
const READ_COMMITTED = 1;

interface FetchedMessage {
  readonly offset: string;
  readonly value: Buffer | null;
  readonly isControlRecord?: boolean;
}

interface FetchResponse {
  readonly responses: ReadonlyArray<{
    readonly partitions: ReadonlyArray<{ readonly messages: readonly FetchedMessage[] }>;
  }>;
}

/**
 * Reads records of the log's partition by offset, for events whose bodies this client no longer
 * holds. It asks the partition's leader with a plain fetch request, outside any consumer group,
 * so reads at any offset go side by side with the follower, which reads on from its own place.
 *
 * The Kafka client gives no fetch by offset outside a consumer, but hands a consumer's cluster
 * (its brokers and their metadata) to the consumer's partition assigners: this reader makes a
 * consumer only to be handed that, and never starts it.
 */
export class RecordFetcher implements RecordSource {
  private readonly cluster: Cluster;
  private connected: Promise<void> | null = null;
  private fetches = 0;

  constructor(
    kafka: Kafka,
    private readonly topic: string,
    private readonly timeoutMs: number,
    /** True once the log is closing: a failed request is then not retried. */
    private readonly closing: () => boolean,
  ) {
    let cluster: Cluster | null = null;
    kafka.consumer({
      groupId: `chronolog.${topic}.reader`,
      partitionAssigners: [
        (config) => {
          cluster = config.cluster;
          return {
            name: "chronolog-reader",
            version: 1,
            assign: async () => [],
            protocol: () => ({ name: "chronolog-reader", metadata: Buffer.alloc(0) }),
          };
        },
      ],
    });
    if (!cluster) throw new Error("the Kafka client did not hand over its cluster");
    this.cluster = cluster;
  }

  /** Fetch requests made so far. */
  get reads(): number {
    return this.fetches;
  }

  private connect(): Promise<void> {
    if (!this.connected) {
      this.connected = (async () => {
        await this.cluster.connect();
        await this.cluster.addTargetTopic(this.topic);
      })().catch((error) => {
        this.connected = null;
        throw error;
      });
    }
    return this.connected;
  }

  async read(offset: bigint, maxBytes: number): Promise<RawRecord[]> {
    const deadline = performance.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.fetch(offset, maxBytes);
      } catch (error) {
        if (this.closing() || performance.now() > deadline)
          throw new LogUnavailableError(
            `kafka log ${this.topic}: could not read the record at offset ${offset}: ${(error as Error).message}`,
          );
        // Leadership moved or a broker died: ask for the metadata again and retry.
        await this.cluster.refreshMetadata().catch(() => {});
        await sleep(Math.min(500, 10 * 2 ** attempt));
      }
    }
  }

  private async fetch(offset: bigint, maxBytes: number): Promise<RawRecord[]> {
    await this.connect();
    await this.cluster.refreshMetadataIfNecessary();
    const leaders = this.cluster.findLeaderForPartitions(this.topic, [0]);
    const nodeId = Object.keys(leaders)[0];
    if (nodeId === undefined) throw new Error("the partition has no leader");
    const broker = await this.cluster.findBroker({ nodeId });
    this.fetches += 1;
    const response = (await broker.fetch({
      isolationLevel: READ_COMMITTED,
      maxWaitTime: 0,
      minBytes: 1,
      maxBytes,
      topics: [
        {
          topic: this.topic,
          partitions: [{ partition: 0, fetchOffset: offset.toString(), maxBytes }],
        },
      ],
    })) as FetchResponse;
    const messages = response.responses[0]?.partitions[0]?.messages ?? [];
    const out: RawRecord[] = [];
    for (const m of messages) {
      const at = BigInt(m.offset);
      // A fetch answers with whole batches: the first may begin before the offset asked for.
      if (at < offset || m.isControlRecord) continue;
      out.push({ offset: at, value: m.value });
    }
    return out;
  }

  async disconnect(): Promise<void> {
    await this.cluster.disconnect();
  }
}
