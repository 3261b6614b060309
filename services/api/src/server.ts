import { readFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import type { SchedulerProjection } from "@chronolog/core";
import type { EventLog, RecordedEvent } from "@chronolog/log";
import type { RemoteWorkers } from "@chronolog/scheduler";
import { type ServerType, serve } from "@hono/node-server";
import { createApiApp } from "./app.js";
import { loopbackHosts, type StreamLimits } from "./guard.js";
import { ApiMetrics, type SchedulerHooks } from "./metrics.js";
import { HttpProblem } from "./problem.js";
import { ApiState } from "./state.js";

export interface ApiServerOptions {
  /** The log to read. */
  readonly log: EventLog;
  /** Where writes go; omit for a read-only server. */
  readonly writeLog?: EventLog;
  readonly dataDir: string;
  /** `HOST:PORT` (port 0: any free port). */
  readonly listen: string;
  readonly publicRead?: boolean;
  readonly bodyLimitBytes?: number;
  readonly sseMaxLag?: number;
  /** Most live streams per token and in all. */
  readonly streamLimits?: Partial<StreamLimits>;
  /** Most `?at=` views folded at once, and waiting. */
  readonly asOfBuilds?: { readonly concurrent?: number; readonly queued?: number };
  /**
   * More names a loopback-bound server answers to (`name` or `name:port`), beside localhost,
   * 127.0.0.1 and [::1]: a reverse proxy's, say.
   */
  readonly allowHosts?: readonly string[];
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** Listen on a non-loopback address without TLS. */
  readonly insecure?: boolean;
  readonly hooks?: SchedulerHooks;
  /**
   * Beside a scheduler in this process: read its projection, fed by the events it applies,
   * rather than fold the log a second time.
   */
  readonly shared?: {
    readonly projection: SchedulerProjection;
    readonly feed: (listener: (e: RecordedEvent) => void) => () => void;
    /** Its remote workers: the API serves the worker protocol for them. */
    readonly workers?: RemoteWorkers;
  };
}

export interface ApiServer {
  /** Where it listens, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly state: ApiState;
  close(): Promise<void>;
}

/** Splits `HOST:PORT` (`[::1]:8080` for IPv6); a bad one is refused naming the flag. */
export function parseListen(text: string, flag = "--http"): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65_535)
    throw new HttpProblem(
      400,
      "validation",
      `${flag} takes HOST:PORT (e.g. 127.0.0.1:8080) or off, not "${text}"`,
    );
  return { host: (m[1] ?? m[2]) as string, port };
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Where the API is to listen, refused (an HttpProblem of status 400) when the address is not one,
 * or is not loopback and has neither TLS nor `insecure`: tokens travel in every request.
 */
export function listenAddress(o: Pick<ApiServerOptions, "listen" | "tls" | "insecure">): {
  host: string;
  port: number;
} {
  const { host, port } = parseListen(o.listen);
  if (!isLoopback(host) && !o.tls && !o.insecure)
    throw new HttpProblem(
      400,
      "validation",
      `${host} is not a loopback address: give --tls-cert and --tls-key (tokens travel in every request), or --insecure`,
    );
  return { host, port };
}

/** The refusal of an address another process listens on. */
export function addressInUse(listen: string): HttpProblem {
  return new HttpProblem(
    400,
    "validation",
    `${listen} is in use: choose another with --http HOST:PORT, or --http off`,
  );
}

/**
 * Refuses an address the API could not listen on because another process does (`addressInUse`),
 * or that is not one (`listenAddress`), before a caller that starts the API late (once its
 * projection is loaded) opens or writes anything. Port 0 (any free port) is never in use; any
 * other failure to listen is left to the API's own listen to report.
 */
export async function checkListen(o: Pick<ApiServerOptions, "listen" | "tls" | "insecure">): Promise<void> {
  const { host, port } = listenAddress(o);
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", (error: NodeJS.ErrnoException) =>
      error.code === "EADDRINUSE" ? reject(addressInUse(o.listen)) : resolve(),
    );
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Starts the HTTP API: loads its own projection, follows the log, and listens. A non-loopback
 * address needs TLS (or `insecure`): tokens travel in every request.
 */
export async function startApiServer(o: ApiServerOptions): Promise<ApiServer> {
  const { host, port } = listenAddress(o);
  const tls = o.tls ? { cert: readFileSync(o.tls.certFile), key: readFileSync(o.tls.keyFile) } : null;
  const state = o.shared
    ? await ApiState.shared(o.log, o.dataDir, o.shared.projection, o.shared.feed)
    : await ApiState.open(o.log, o.dataDir);
  const metrics = new ApiMetrics(state, o.hooks);
  // Bound to loopback, the server answers only to loopback names: a page of another site whose
  // name a DNS rebinding points at 127.0.0.1 sends its own Host, and is refused.
  let hosts: Set<string> | null = null;
  const app = createApiApp({
    ...(isLoopback(host) ? { allowedHosts: () => hosts } : {}),
    ...(o.streamLimits ? { streamLimits: o.streamLimits } : {}),
    ...(o.asOfBuilds ? { asOfBuilds: o.asOfBuilds } : {}),
    state,
    writeLog: o.writeLog ?? null,
    dataDir: o.dataDir,
    metrics,
    ...(o.publicRead ? { publicRead: true } : {}),
    ...(o.bodyLimitBytes !== undefined ? { bodyLimitBytes: o.bodyLimitBytes } : {}),
    ...(o.sseMaxLag !== undefined ? { sseMaxLag: o.sseMaxLag } : {}),
    ...(o.shared?.workers ? { remoteWorkers: o.shared.workers } : {}),
  });
  let server: ServerType | null = null;
  const address = await new Promise<AddressInfo>((resolve, reject) => {
    server = serve(
      {
        fetch: app.fetch,
        hostname: host,
        port,
        ...(tls ? { createServer: createHttpsServer, serverOptions: tls } : {}),
      },
      (info) => resolve(info),
    );
    (server as ServerType).once("error", (error: NodeJS.ErrnoException) => {
      void state.close();
      reject(error.code === "EADDRINUSE" ? addressInUse(o.listen) : error);
    });
  });
  if (isLoopback(host)) {
    hosts = loopbackHosts(host, address.port);
    for (const extra of o.allowHosts ?? []) {
      const name = extra.toLowerCase();
      hosts.add(/:\d+$/.test(name) ? name : `${name}:${address.port}`);
    }
    // A browser leaves the port out when it is the scheme's own.
    if (address.port === (tls ? 443 : 80)) for (const h of [...hosts]) hosts.add(h.replace(/:\d+$/, ""));
  }
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const srv = server as unknown as ServerType;
  return {
    url: `${tls ? "https" : "http"}://${shown}:${address.port}`,
    state,
    close: async () => {
      metrics.close();
      await state.close();
      await new Promise<void>((resolve) => {
        srv.close(() => resolve());
        // Live event streams and long polls end with the server.
        (srv as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}
