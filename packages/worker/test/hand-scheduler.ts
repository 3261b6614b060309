import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { RemoteWorker, type RemoteWorkerOptions } from "../src/remote/client.js";
import { Link } from "../src/remote/link.js";
import { registrationAnswer } from "./helpers.js";

/**
 * What a scheduler spoken by hand does on each route of the remote protocol. A handler answers
 * `res` itself (see `answer`), when it likes: a report left unanswered is a scheduler writing.
 */
export interface HandRoutes {
  /** The registration's answer (default: `registrationAnswer()`), given the worker's body. */
  readonly register?: (body: string) => string;
  /** The command stream, its headers sent: write to it with `commands`. */
  readonly commands?: (stream: ServerResponse) => void;
  /** A batch of reports. Default: every message accepted. */
  readonly reports?: (body: string, res: ServerResponse) => void | Promise<void>;
  /** A chunk of an attempt's output (`PUT .../output?offset=N`). */
  readonly output?: (offset: number, body: Buffer, res: ServerResponse) => void | Promise<void>;
  /** The worker's goodbye (`DELETE /api/v1/workers/ID`). */
  readonly goodbye?: () => void;
  /** Run first when the test ends, before the server closes (to let go of answers held). */
  readonly release?: () => void;
}

/** Sends `messages` on a command stream, stamped with the scheduler's clock `at` if given. */
export function commands(stream: ServerResponse | undefined, messages: readonly object[], at?: number): void {
  stream?.write(
    `event: commands\ndata: ${JSON.stringify(at === undefined ? { messages } : { messages, at })}\n\n`,
  );
}

/** Answers a request with JSON. */
export function answer(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

/**
 * A scheduler spoken by hand on a loopback port, and a remote worker (id `w`, queue `q`) that
 * connects to it: `stops` is given how to stop both (the server's release, its close, then the
 * worker's stop). The worker's log lines are kept in `logs`.
 */
export async function handScheduler(
  routes: HandRoutes,
  stops: Array<() => Promise<void> | void>,
  worker: Partial<Pick<RemoteWorkerOptions, "capacity" | "runtime" | "now">> = {},
): Promise<{ worker: RemoteWorker; logs: string[] }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      if (req.method === "POST" && req.url === "/api/v1/workers") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(routes.register ? routes.register(body.toString("utf8")) : registrationAnswer());
      } else if (req.method === "GET" && req.url?.endsWith("/commands")) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        routes.commands?.(res);
      } else if (req.method === "POST" && req.url?.endsWith("/reports")) {
        if (routes.reports) await routes.reports(body.toString("utf8"), res);
        else answer(res, { accepted: 1, refused: [] });
      } else if (req.method === "DELETE" && req.url?.startsWith("/api/v1/workers/")) {
        routes.goodbye?.();
        answer(res, {});
      } else if (req.method === "PUT" && req.url?.includes("/output?offset=") && routes.output) {
        const offset = Number(new URL(req.url, "http://x").searchParams.get("offset"));
        await routes.output(offset, body, res);
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  stops.push(() => {
    routes.release?.();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const { port } = server.address() as AddressInfo;
  const logs: string[] = [];
  const remote = new RemoteWorker({
    links: [new Link({ url: `http://127.0.0.1:${port}`, token: "t" })],
    id: "w",
    host: "h",
    queues: ["q"],
    capacity: worker.capacity ?? 1,
    version: "test",
    runtime: worker.runtime ?? {},
    log: (m) => logs.push(m),
    ...(worker.now ? { now: worker.now } : {}),
  });
  const running = remote.run();
  stops.push(async () => {
    await remote.stop(0);
    await running.catch(() => {});
  });
  return { worker: remote, logs };
}
