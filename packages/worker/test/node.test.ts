import { writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runNode } from "../src/operators/node.js";
import { runNoop } from "../src/operators/noop.js";
import { type NodeOperator, type NoopOperator, parseOperator } from "../src/operators/spec.js";
import { ctxFor, harness, runCmd, tempDir } from "./helpers.js";

let dir: string;
let modulePath: string;

beforeAll(async () => {
  dir = await tempDir();
  modulePath = join(dir, "task.mjs");
  await writeFile(
    modulePath,
    `export default async function (args, ctx) {
  return { sum: args.a + args.b, token: ctx.token, attempt: ctx.attempt, date: ctx.logicalDate, key: ctx.taskKey };
}
export function boom() { throw new Error("kaput"); }
export const notAFunction = 1;
export function big() { return "z".repeat(100000); }
export function waitForAbort(_args, ctx) {
  return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
}
export function ignoreAbort() { return new Promise(() => {}); }
export function workerPid(_args, ctx) { return ctx.workerPid; }
`,
  );
});

const op = (extra: Record<string, unknown>) =>
  parseOperator({ type: "node", module: modulePath, ...extra }) as NodeOperator;

describe("node operator", () => {
  it("calls the default export with args and context; the value's JSON is stdoutTail", async () => {
    const o = await runNode(op({ args: { a: 2, b: 3 } }), ctxFor());
    expect(o.ok).toBe(true);
    expect(JSON.parse(o.stdoutTail)).toEqual({
      sum: 5,
      token: "tok-ctx",
      attempt: 2,
      date: "2026-11-28T02:00:00.000Z",
      key: "sales/acme/orders/ALL",
    });
  });

  it("gives the function the worker's pid as context.workerPid", async () => {
    const o = await runNode(op({ export: "workerPid" }), ctxFor());
    expect(o.ok).toBe(true);
    expect(JSON.parse(o.stdoutTail)).toBe(process.pid);
  });

  it("resolves a relative module path against process.cwd()", async () => {
    const o = await runNode(
      op({ module: relative(process.cwd(), modulePath), args: { a: 1, b: 1 } }),
      ctxFor(),
    );
    expect(JSON.parse(o.stdoutTail).sum).toBe(2);
  });

  it("reports a throw as kind exception with its message", async () => {
    const o = await runNode(op({ export: "boom" }), ctxFor());
    expect(o.ok).toBe(false);
    expect(o.error).toEqual({ kind: "exception", message: "kaput" });
    expect(o.stderrTail).toContain("kaput");
  });

  it("fails when the export is missing or the module cannot be loaded", async () => {
    expect((await runNode(op({ export: "notAFunction" }), ctxFor())).error?.kind).toBe("exception");
    const missing = await runNode(op({ module: join(dir, "nope.mjs") }), ctxFor());
    expect(missing.error?.kind).toBe("exception");
  });

  it("truncates a large result to the tail", async () => {
    const o = await runNode(op({ export: "big" }), ctxFor());
    expect(o.stdoutTail.length).toBe(4096);
  });

  it("times out, aborting the context signal", async () => {
    const o = await runNode(op({ export: "waitForAbort", timeoutMs: 100 }), ctxFor());
    expect(o.error).toEqual({ kind: "timeout", message: "timed out after 100 ms" });
  });

  it("settles on cancel even if the function ignores the signal", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("no longer needed")), 50);
    const o = await runNode(op({ export: "ignoreAbort" }), ctxFor(ac.signal));
    expect(o.error).toEqual({ kind: "exception", message: "cancelled: no longer needed" });
  });

  it("passes stagingDir through the runtime", async () => {
    const root = await tempDir();
    const mod = join(dir, "staging.mjs");
    await writeFile(mod, "export default (_a, ctx) => ctx.stagingDir;\n");
    const { runtime, finished } = harness({ stagingRoot: root });
    runtime.handle({
      kind: "batch",
      messages: [runCmd({ type: "node", module: mod }, { token: "tok-node" })],
    });
    const r = await finished("tok-node");
    expect(JSON.parse(r.stdoutTail)).toBe(join(root, "tok-node"));
  });
});

describe("noop operator", () => {
  it("succeeds at once", async () => {
    const o = await runNoop(parseOperator({ type: "noop" }) as NoopOperator, ctxFor());
    expect(o).toMatchObject({ ok: true, durationMs: 0, stdoutTail: "", stderrTail: "" });
  });
});

describe("node task's process", () => {
  it("puts what the function prints in the output, before its value, and its stderr in the tail of a throw", async () => {
    const mod = join(dir, "prints.mjs");
    await writeFile(
      mod,
      'export default () => { console.log("printed"); return { v: 1 }; };\nexport function fails() { console.error("to stderr"); throw new Error("bad"); }\n',
    );
    const chunks: string[] = [];
    const output = { write: (c: Uint8Array | string) => void chunks.push(String(c)) };
    const o = await runNode(op({ module: mod }), { ...ctxFor(), output });
    expect(o.ok).toBe(true);
    expect(chunks.join("")).toBe('printed\n{"v":1}\n');
    const f = await runNode(op({ module: mod, export: "fails" }), ctxFor());
    expect(f.error).toEqual({ kind: "exception", message: "bad" });
    expect(f.stderrTail).toMatch(/^to stderr\nError: bad/);
  });
});
