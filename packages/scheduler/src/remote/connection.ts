import type { CommandsEvent, RunCommand, WorkerCommand } from "@chronolog/worker";

/** Where a connected worker's commands go: its open command stream (Server-Sent Events). */
export interface CommandSink {
  /** Writes one batch; resolves once the connection took it, rejects when it is broken. */
  send(batch: CommandsEvent): Promise<void>;
  /** A keepalive: says the scheduler is there, and finds a broken link. */
  ping(): Promise<void>;
  /** Ends the stream, saying why. */
  close(reason: string): void;
}

/** One registered remote worker, as the scheduler it registered with sees it. */
export interface RemoteConnection {
  readonly id: string;
  readonly host: string;
  readonly queues: ReadonlySet<string>;
  readonly capacity: number;
  readonly version: string;
  /** The token it registered with (its name), if any. */
  readonly tokenName: string | undefined;
  /** `worker:<id>@<host>`: who its reports are written as. */
  readonly actor: string;
  /** Sent with every later request of this registration. */
  readonly session: string;
  /** Attempts given to it (or adopted from it) and not reported finished: token -> its command, if sent here. */
  readonly given: Map<string, RunCommand | null>;
  /** Of `given`: token -> when it was given or adopted, or a report of it last came (epoch ms). */
  readonly spokenOf: Map<string, number>;
  /** Commands waiting for its stream. */
  outbox: WorkerCommand[];
  /**
   * When the oldest of `outbox` was queued (epoch ms): the batch is stamped with it (its `at`),
   * so that the worker can tell a command its stream delivered late (see CommandsEvent).
   */
  outboxSince: number;
  sink: CommandSink | null;
  /** A batch is being written to its stream. */
  writing: boolean;
  /** When it was last heard from (epoch ms). */
  lastHeard: number;
  /** Dropped: it takes nothing more. */
  gone: boolean;
}
