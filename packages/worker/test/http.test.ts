import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHttp } from "../src/operators/http.js";
import { type HttpOperator, parseOperator } from "../src/operators/spec.js";
import { OUTPUT_TAIL_BYTES } from "../src/protocol.js";
import { ctxFor } from "./helpers.js";

let server: Server;
let base: string;
const seen: { method?: string; body: string; header?: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method, body, header: req.headers["x-chronolog"] as string | undefined });
      if (req.url === "/ok") return res.end("hello");
      if (req.url === "/fail") {
        res.statusCode = 500;
        return res.end("boom");
      }
      if (req.url === "/missing") {
        res.statusCode = 404;
        return res.end("not here");
      }
      if (req.url === "/big") {
        res.write("a".repeat(1 << 20));
        return res.end("THE END");
      }
      if (req.url === "/slow") return setTimeout(() => res.end("late"), 3000).unref();
      res.statusCode = 400;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const op = (path: string, extra: Record<string, unknown> = {}) =>
  parseOperator({ type: "http", url: `${base}${path}`, ...extra }) as HttpOperator;

describe("http operator", () => {
  it("succeeds on 200 with the body as stdoutTail, sending method, headers and body", async () => {
    const o = await runHttp(
      op("/ok", { method: "POST", headers: { "x-chronolog": "yes" }, body: "payload" }),
      ctxFor(),
    );
    expect(o).toMatchObject({ ok: true, stdoutTail: "hello", exitCode: null });
    expect(seen.at(-1)).toEqual({ method: "POST", body: "payload", header: "yes" });
  });

  it("fails with http_status on 500", async () => {
    const o = await runHttp(op("/fail"), ctxFor());
    expect(o.ok).toBe(false);
    expect(o.error?.kind).toBe("http_status");
    expect(o.error?.message).toContain("500");
    expect(o.stdoutTail).toBe("boom");
  });

  it("accepts a status listed in expectStatus", async () => {
    expect((await runHttp(op("/missing", { expectStatus: [404] }), ctxFor())).ok).toBe(true);
    expect((await runHttp(op("/ok", { expectStatus: [404] }), ctxFor())).error?.kind).toBe("http_status");
  });

  it("fails with timeout when the server is too slow", async () => {
    const t0 = Date.now();
    const o = await runHttp(op("/slow", { timeoutMs: 200 }), ctxFor());
    expect(o.error?.kind).toBe("timeout");
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it("keeps only the tail of a large body", async () => {
    const o = await runHttp(op("/big"), ctxFor());
    expect(o.ok).toBe(true);
    expect(o.stdoutTail.length).toBe(OUTPUT_TAIL_BYTES);
    expect(o.stdoutTail.endsWith("aTHE END")).toBe(true);
  });

  it("stops on cancel and reports a refused connection as an exception", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("enough")), 100);
    const o = await runHttp(op("/slow"), ctxFor(ac.signal));
    expect(o.error).toEqual({ kind: "exception", message: "cancelled: enough" });
    const refused = await runHttp(
      parseOperator({ type: "http", url: "http://127.0.0.1:1/" }) as HttpOperator,
      ctxFor(),
    );
    expect(refused.error?.kind).toBe("exception");
  });

  it("refuses a URL, as rendered, that is not http or https, sending nothing", async () => {
    const before = seen.length;
    for (const url of ["file:///etc/passwd", "data:text/plain,hi", `${base.replace("http://", "")}/ok`]) {
      const o = await runHttp({ ...op("/ok"), url }, ctxFor());
      expect(o.error?.kind).toBe("exception");
      expect(o.error?.message).toBe(`GET ${url} refused: not an http or https URL`);
    }
    expect(seen.length).toBe(before);
  });
});
