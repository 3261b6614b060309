import { type ApiAnswer, api } from "../api/support.js";

export interface Registration {
  readonly queues: readonly string[];
  readonly host?: string;
  readonly running?: readonly string[];
  readonly version?: string;
}

/** A worker spoken by hand, as any HTTP client would: register, read the command stream, post. */
export class HandWorker {
  session = "";
  readonly commands: Array<Record<string, unknown>> = [];
  /** Called with each `query` command as it arrives. */
  onQuery: ((q: { requestId: string; tokens: string[] }) => void) | null = null;
  private abort = new AbortController();

  constructor(
    private readonly url: string,
    private readonly token: string,
    readonly id: string,
  ) {}

  /** The registration's answer, whatever it is (no command stream opened). */
  registration(r: Registration): Promise<ApiAnswer> {
    return api(this.url, "/workers", {
      token: this.token,
      body: {
        protocol: 1,
        id: this.id,
        host: r.host ?? "handmade",
        queues: r.queues,
        capacity: 4,
        version: r.version ?? "test",
        running: r.running ?? [],
      },
    });
  }

  /** Registers (200 expected) and reads the command stream from then on; returns the answer. */
  async register(queues: string[], more: Omit<Registration, "queues"> = {}): Promise<ApiAnswer> {
    const r = await this.registration({ queues, ...more });
    if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`);
    this.session = r.body.session;
    const res = await fetch(`${this.url}/api/v1/workers/${this.id}/commands`, {
      headers: { authorization: `Bearer ${this.token}`, "chronolog-session": this.session },
      signal: this.abort.signal,
    });
    if (res.status !== 200 || !res.body) throw new Error(`commands: ${res.status}`);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let cut = buffer.indexOf("\n\n");
          while (cut >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event === "commands" && data)
              for (const m of JSON.parse(data).messages) {
                this.commands.push(m);
                if (m.kind === "query") this.onQuery?.(m);
              }
            cut = buffer.indexOf("\n\n");
          }
        }
      } catch {
        // closed by the test
      }
    })();
    return r;
  }

  report(messages: unknown[]): Promise<ApiAnswer> {
    return api(this.url, `/workers/${this.id}/reports`, {
      token: this.token,
      headers: { "chronolog-session": this.session },
      body: { messages },
    });
  }

  /** PUTs a chunk of an attempt's output at `offset`. */
  output(token: string, offset: number, bytes: string): Promise<ApiAnswer> {
    return api(
      this.url,
      `/workers/${this.id}/attempts/${encodeURIComponent(token)}/output?offset=${offset}`,
      {
        token: this.token,
        method: "PUT",
        headers: { "chronolog-session": this.session },
        type: "application/octet-stream",
        body: bytes,
      },
    );
  }

  /** Says goodbye (DELETE): the worker takes nothing more. */
  goodbye(): Promise<ApiAnswer> {
    return api(this.url, `/workers/${this.id}`, {
      token: this.token,
      method: "DELETE",
      headers: { "chronolog-session": this.session },
    });
  }

  close(): void {
    this.abort.abort();
  }
}
