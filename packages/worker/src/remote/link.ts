import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

export interface LinkOptions {
  /** The scheduler's API, e.g. `https://scheduler.example:8080`. */
  readonly url: string;
  /** The bearer token (a `work` token). */
  readonly token: string;
  /** PEM of the CA that signed the scheduler's certificate (default: the system's). */
  readonly ca?: string | Buffer;
  /** Allow plain http to a host that is not loopback. */
  readonly insecure?: boolean;
}

export interface LinkAnswer {
  readonly status: number;
  readonly body: Buffer;
  /** The body as JSON, or undefined when it is not. */
  json<T = unknown>(): T | undefined;
}

/** A link that cannot be made or broke (no answer at all). */
export class LinkDown extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LinkDown";
  }
}

/** Whether a host name is loopback (the API's own rule for serving without TLS). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Checks the scheduler's URL: https, or http to loopback (or with `insecure`). */
export function checkSchedulerUrl(text: string, insecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`--connect takes the scheduler's URL (https://HOST:PORT), not "${text}"`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new Error(`--connect takes an http or https URL, not ${url.protocol}`);
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname) && !insecure)
    throw new Error(
      `--connect ${url.origin} is plain http to a host that is not loopback: the token would travel in the clear; use https (with --ca FILE for a private CA), or --insecure on a network you trust`,
    );
  return url;
}

/**
 * HTTP/1.1 requests to the scheduler's API, over one keep-alive agent: JSON or bytes in, the
 * answer's status and body out, and a long-lived Server-Sent Events stream.
 */
export class Link {
  readonly base: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly https: boolean;

  constructor(private readonly o: LinkOptions) {
    this.base = checkSchedulerUrl(o.url, !!o.insecure);
    this.https = this.base.protocol === "https:";
    this.agent = this.https
      ? new HttpsAgent({ keepAlive: true, ...(o.ca ? { ca: o.ca } : {}) })
      : new HttpAgent({ keepAlive: true });
  }

  request(
    method: string,
    path: string,
    options: {
      headers?: Record<string, string>;
      body?: Buffer | string;
      json?: unknown;
      timeoutMs?: number;
    } = {},
  ): Promise<LinkAnswer> {
    const body = options.json !== undefined ? Buffer.from(JSON.stringify(options.json)) : options.body;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.o.token}`,
      accept: "application/json",
      ...(options.json !== undefined ? { "content-type": "application/json" } : {}),
      ...options.headers,
    };
    if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
    return new Promise((resolve, reject) => {
      const req = this.open(method, path, headers, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (e) => reject(new LinkDown(e.message)));
        res.on("end", () => {
          const buf = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            body: buf,
            json: <T>() => {
              try {
                return JSON.parse(buf.toString("utf8")) as T;
              } catch {
                return undefined;
              }
            },
          });
        });
      });
      req.setTimeout(options.timeoutMs ?? 15_000, () => req.destroy(new Error("no answer in time")));
      req.on("error", (e) => reject(new LinkDown(e.message)));
      req.end(body);
    });
  }

  /**
   * Opens a Server-Sent Events stream and hands each event to `onEvent`; resolves when the
   * stream ends (the server closed it, the link broke, or `abort` was called), rejects when the
   * server refused it (with its status and body).
   */
  stream(
    path: string,
    headers: Record<string, string>,
    onEvent: (event: string, data: string) => void,
    signal: AbortSignal,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = this.open(
        "GET",
        path,
        { authorization: `Bearer ${this.o.token}`, accept: "text/event-stream", ...headers },
        (res: IncomingMessage) => {
          if (res.statusCode !== 200) {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () =>
              reject(
                new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString("utf8").slice(0, 2000)}`),
              ),
            );
            return;
          }
          res.setEncoding("utf8");
          const parser = new EventStreamParser(onEvent);
          res.on("data", (text: string) => parser.push(text));
          res.on("end", () => resolve());
          res.on("error", () => resolve());
          res.on("close", () => resolve());
        },
      );
      const abort = () => req.destroy();
      signal.addEventListener("abort", abort, { once: true });
      req.on("error", (e) => (signal.aborted ? resolve() : reject(new LinkDown(e.message))));
      req.on("close", () => signal.removeEventListener("abort", abort));
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }

  private open(
    method: string,
    path: string,
    headers: Record<string, string>,
    onResponse: (res: IncomingMessage) => void,
  ) {
    const url = new URL(path, this.base);
    const options = { method, headers, agent: this.agent };
    return this.https ? httpsRequest(url, options, onResponse) : httpRequest(url, options, onResponse);
  }
}

/**
 * Server-Sent Events, parsed as they arrive: each character is looked at once, however many
 * chunks an event comes in (a batch of a thousand commands is one event of a few hundred KB,
 * read in 64 KB chunks: looking for its end from its start at every chunk cost a worker more
 * than the rest of reading it).
 */
export class EventStreamParser {
  /** The text of the event being read, in the chunks it came in. */
  private parts: string[] = [];
  /** Whether that text ends with a line feed (its end may be a line feed away). */
  private endsWithLf = false;
  /** A carriage return at the end of a chunk: a line feed may follow in the next. */
  private cr = false;

  constructor(private readonly onEvent: (event: string, data: string) => void) {}

  push(chunk: string): void {
    let text = this.cr ? `\r${chunk}` : chunk;
    this.cr = text.endsWith("\r");
    if (this.cr) text = text.slice(0, -1);
    text = text.replace(/\r\n?/g, "\n");
    if (text.length === 0) return;
    if (this.endsWithLf && text.startsWith("\n")) {
      this.emit(this.parts.join("").slice(0, -1));
      text = text.slice(1);
    }
    let cut = text.indexOf("\n\n");
    while (cut >= 0) {
      this.parts.push(text.slice(0, cut));
      this.emit(this.parts.join(""));
      text = text.slice(cut + 2);
      cut = text.indexOf("\n\n");
    }
    if (text.length > 0) this.parts.push(text);
    this.endsWithLf = this.parts.length > 0 && text.endsWith("\n");
  }

  private emit(block: string): void {
    this.parts = [];
    this.endsWithLf = false;
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0) this.onEvent(event, data.join("\n"));
  }
}
