import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { FailedReport } from "../src/protocol.js";
import { publishStaged, stagedWrite, stagingDirFor } from "../src/staging.js";
import { harness, runCmd, shell, sleep, tempDir } from "./helpers.js";

const batchOf = (...messages: ReturnType<typeof runCmd>[]) => ({ kind: "batch" as const, messages });

describe("publishStaged and stagedWrite", () => {
  it("renames the whole staging directory into a target that does not exist", async () => {
    const root = await tempDir();
    const staging = join(root, "staging");
    await stagedWrite(staging, "part-0.csv", "a,b\n");
    await stagedWrite(staging, "nested/part-1.csv", "c,d\n");
    const target = join(root, "out", "2026-11-28");
    const published = await publishStaged(staging, target);
    expect(published.sort()).toEqual([join(target, "nested"), join(target, "part-0.csv")]);
    expect(await readFile(join(target, "nested/part-1.csv"), "utf8")).toBe("c,d\n");
    expect(existsSync(staging)).toBe(false);
  });

  it("moves entries into an existing target, replacing files and merging directories", async () => {
    const root = await tempDir();
    const target = join(root, "target");
    await mkdir(join(target, "nested"), { recursive: true });
    await writeFile(join(target, "keep.txt"), "kept");
    await writeFile(join(target, "data.csv"), "old");
    await writeFile(join(target, "nested", "old.csv"), "old nested");
    const staging = join(root, "staging");
    await stagedWrite(staging, "data.csv", "new");
    await stagedWrite(staging, "nested/new.csv", "new nested");
    await publishStaged(staging, target);
    expect(await readFile(join(target, "data.csv"), "utf8")).toBe("new");
    expect(await readFile(join(target, "keep.txt"), "utf8")).toBe("kept");
    expect((await readdir(join(target, "nested"))).sort()).toEqual(["new.csv", "old.csv"]);
    expect(existsSync(staging)).toBe(false);
  });

  it("refuses a staged path outside the staging directory, and makes tokens safe path segments", async () => {
    const root = await tempDir();
    await expect(stagedWrite(root, "../escape.txt", "x")).rejects.toThrow(/leaves the staging directory/);
    expect(stagingDirFor(root, "../../etc")).toBe(join(root, ".._.._etc"));
    expect(stagingDirFor(root, "..")).toBe(join(root, "t_.."));
  });
});

describe("WorkerRuntime with publishTo", () => {
  it("publishes the staged outputs on success, before reporting succeeded; nothing visible while running", async () => {
    const stagingRoot = await tempDir();
    const target = join(await tempDir(), "orders", "2026-11-28");
    const { runtime, finished } = harness({ stagingRoot });
    const script =
      'echo "id,total" > "$CHRONOLOG_STAGING_DIR/orders.csv"; sleep 0.3; echo "1,9.5" >> "$CHRONOLOG_STAGING_DIR/orders.csv"';
    runtime.handle(batchOf(runCmd(shell(script, { publishTo: target }), { token: "p1" })));
    await sleep(150);
    expect(existsSync(target)).toBe(false);
    const r = await finished("p1");
    expect(r.kind).toBe("succeeded");
    expect(await readFile(join(target, "orders.csv"), "utf8")).toBe("id,total\n1,9.5\n");
    expect(existsSync(join(stagingRoot, "p1"))).toBe(false);
  });

  it("publishes a node task's stagedWrite outputs", async () => {
    const stagingRoot = await tempDir();
    const dir = await tempDir();
    const target = join(dir, "target");
    const mod = join(dir, "writer.mjs");
    // The SDK as a task imports it: the built package (the suite's global setup builds it).
    const sdk = new URL("../dist/staging.js", import.meta.url).href;
    await writeFile(
      mod,
      `import { stagedWrite } from ${JSON.stringify(sdk)};\nexport default (args, ctx) => stagedWrite(ctx.stagingDir, "daily/out.json", JSON.stringify(args));\n`,
    );
    const { runtime, finished } = harness({ stagingRoot });
    runtime.handle(
      batchOf(runCmd({ type: "node", module: mod, args: { n: 1 }, publishTo: target }, { token: "p2" })),
    );
    expect((await finished("p2")).kind).toBe("succeeded");
    expect(JSON.parse(await readFile(join(target, "daily", "out.json"), "utf8"))).toEqual({ n: 1 });
  });

  it("leaves nothing at the target and removes the staging dir when the task fails or is killed", async () => {
    const stagingRoot = await tempDir();
    const base = await tempDir();
    const { runtime, finished } = harness({ stagingRoot });
    const write = 'echo partial > "$CHRONOLOG_STAGING_DIR/out.csv"';
    runtime.handle(
      batchOf(
        runCmd(shell(`${write}; exit 1`, { publishTo: join(base, "failed") }), { token: "f1" }),
        runCmd(shell(`${write}; sleep 10`, { publishTo: join(base, "killed") }), { token: "f2" }),
        runCmd(shell(`${write}; sleep 10`, { publishTo: join(base, "timeout"), timeoutMs: 200 }), {
          token: "f3",
        }),
      ),
    );
    await sleep(100);
    runtime.cancel("f2", "operator asked");
    for (const token of ["f1", "f2", "f3"]) {
      const r = await finished(token);
      expect(r.kind).toBe("failed");
      expect(existsSync(join(stagingRoot, token))).toBe(false);
    }
    expect(await readdir(base)).toEqual([]);
  });

  it("fails an attempt with publishTo when the worker has no staging root", async () => {
    const { runtime, finished } = harness();
    runtime.handle(batchOf(runCmd(shell("true", { publishTo: "/tmp/nowhere" }), { token: "p3" })));
    const r = (await finished("p3")) as FailedReport;
    expect(r.error.message).toContain("staging root");
  });

  it("does not publish without publishTo: the staged files stay in the staging dir", async () => {
    const stagingRoot = await tempDir();
    const { runtime, finished } = harness({ stagingRoot });
    runtime.handle(batchOf(runCmd(shell('echo x > "$CHRONOLOG_STAGING_DIR/x.txt"'), { token: "p4" })));
    expect((await finished("p4")).kind).toBe("succeeded");
    expect(await readFile(join(stagingRoot, "p4", "x.txt"), "utf8")).toBe("x\n");
  });

  it("leaves no empty staging dir behind a success, and gives a noop none at all", async () => {
    const stagingRoot = await tempDir();
    const { runtime, finished } = harness({ stagingRoot });
    runtime.handle(
      batchOf(
        runCmd(shell('test -d "$CHRONOLOG_STAGING_DIR"'), { token: "e1" }),
        runCmd({ type: "noop" }, { token: "e2" }),
      ),
    );
    expect((await finished("e1")).kind).toBe("succeeded");
    expect((await finished("e2")).kind).toBe("succeeded");
    // The empty directory goes just after the report.
    for (let i = 0; i < 50 && (await readdir(stagingRoot)).length > 0; i++) await sleep(10);
    expect(await readdir(stagingRoot)).toEqual([]);
  });
});
