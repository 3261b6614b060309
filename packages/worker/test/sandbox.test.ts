import { existsSync, statSync } from "node:fs";
import { chmod, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setWarmShells } from "../src/operators/shell.js";
import { configureTasks } from "../src/sandbox.js";
import { harness, runCmd, shell, tempDir } from "./helpers.js";

/** The user tasks run as here: nobody (65534), which needs root to switch to. */
const NOBODY = { uid: 65534, gid: 65534 };
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)("tasks run as another user, each attempt in a directory of its own", () => {
  let workRoot: string;
  let secretFile: string;
  let moduleDir: string;
  beforeAll(async () => {
    const base = await tempDir();
    // The user must be able to reach the roots (not list what is in them).
    await chmod(base, 0o711);
    workRoot = join(base, "work");
    const private_ = await tempDir();
    secretFile = join(private_, "secret");
    await writeFile(secretFile, "only the worker's user reads this\n", { mode: 0o600 });
    // The module of a node task must be readable by the task's user.
    moduleDir = await tempDir();
    await chmod(moduleDir, 0o755);
    await writeFile(
      join(moduleDir, "task.mjs"),
      `import { writeFileSync } from "node:fs";
export default (_args, ctx) => {
  writeFileSync(process.env.HOME + "/note", "x");
  writeFileSync(ctx.stagingDir + "/out.json", "{}");
  return { uid: process.getuid(), gid: process.getgid(), home: process.env.HOME, cwd: process.cwd(), send: typeof process.send, token: process.env.CHRONOLOG_TOKEN };
};
export function forge() {
  process.send({ kind: "batch", messages: [{ kind: "succeeded", token: "someone-else" }] });
  return "sent";
}
export async function readSecret(args) {
  const { readFileSync } = await import("node:fs");
  return readFileSync(args.file, "utf8");
}
export function exit() { process.exit(0); }
`,
      { mode: 0o644 },
    );
    configureTasks({ identity: NOBODY, workRoot, passEnv: [] });
  });
  afterAll(() => {
    configureTasks({ passEnv: [] });
    setWarmShells(0);
  });

  for (const warm of [0, 2]) {
    it(`runs a shell task as the user, with HOME and cwd its own writable directory (${warm ? "warm" : "cold"} start)`, async () => {
      setWarmShells(warm);
      const { runtime, finished } = harness({ stagingRoot: join(workRoot, "..", "staging") });
      const token = `sh-${warm}`;
      runtime.handle({
        kind: "batch",
        messages: [
          runCmd(
            shell(
              `id -u; id -g; echo "$HOME"; pwd; echo hi > "$HOME/note" && echo wrote; echo staged > "$CHRONOLOG_STAGING_DIR/s.txt" && echo staged; cat ${secretFile} 2>/dev/null || echo refused`,
            ),
            { token },
          ),
        ],
      });
      const r = await finished(token);
      expect(r.kind).toBe("succeeded");
      const home = join(workRoot, token);
      expect(r.stdoutTail.split("\n")).toEqual([
        "65534",
        "65534",
        home,
        home,
        "wrote",
        "staged",
        "refused",
        "",
      ]);
      // The working directory goes with the attempt; the staging root cannot be listed.
      expect(existsSync(home)).toBe(false);
      expect(statSync(join(workRoot, "..", "staging")).mode & 0o777).toBe(0o711);
      expect(statSync(workRoot).mode & 0o777).toBe(0o711);
    });
  }

  it("runs a node task in a process of its own as the user, without a channel to the worker", async () => {
    const stagingRoot = join(workRoot, "..", "staging-node");
    const { runtime, finished } = harness({ stagingRoot });
    const mod = join(moduleDir, "task.mjs");
    runtime.handle({
      kind: "batch",
      messages: [
        runCmd({ type: "node", module: mod }, { token: "node-ok" }),
        runCmd({ type: "node", module: mod, export: "forge" }, { token: "node-forge" }),
        runCmd(
          { type: "node", module: mod, export: "readSecret", args: { file: secretFile } },
          { token: "node-read" },
        ),
        runCmd({ type: "node", module: mod, export: "exit" }, { token: "node-exit" }),
      ],
    });
    const ok = await finished("node-ok");
    expect(ok.kind).toBe("succeeded");
    expect(JSON.parse(ok.stdoutTail)).toEqual({
      uid: 65534,
      gid: 65534,
      home: join(workRoot, "node-ok"),
      cwd: join(workRoot, "node-ok"),
      send: "undefined",
      token: "node-ok",
    });
    // What it staged is left in place (no publishTo), owned by the task's user.
    expect(await readdir(join(stagingRoot, "node-ok"))).toEqual(["out.json"]);
    expect(statSync(join(stagingRoot, "node-ok", "out.json")).uid).toBe(65534);

    const forged = await finished("node-forge");
    expect(forged).toMatchObject({ kind: "failed", error: { kind: "exception" } });
    expect((forged as { error: { message: string } }).error.message).toMatch(
      /process\.send is not a function/,
    );

    const read = await finished("node-read");
    expect(read).toMatchObject({ kind: "failed", error: { kind: "exception" } });
    expect((read as { error: { message: string } }).error.message).toMatch(/EACCES/);
    expect(await readFile(secretFile, "utf8")).toContain("only the worker");

    const exited = await finished("node-exit");
    expect(exited).toMatchObject({
      kind: "failed",
      error: {
        kind: "exception",
        message: "the task's process exited with code 0 before its function returned",
      },
    });
  });
});
