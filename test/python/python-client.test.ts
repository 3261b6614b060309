import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

/**
 * The Python package's own suite (`clients/python/tests`, unittest), run as `make test` runs
 * everything: it starts real schedulers and API servers of the built CLI, and this test fails
 * when any of its tests fails, printing unittest's result line.
 */

const PACKAGE = fileURLToPath(new URL("../../clients/python", import.meta.url));

function unittest(): Promise<{ code: number | null; output: string }> {
  const child = spawn("python3", ["-m", "unittest", "discover", "-v"], {
    cwd: PACKAGE,
    env: { ...process.env, PYTHONPATH: "src", PYTHONDONTWRITEBYTECODE: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    output += c.toString();
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, output })));
}

it("python3 -m unittest discover passes in clients/python", async () => {
  const { code, output } = await unittest();
  const lines = output.trimEnd().split("\n");
  const ran = lines.find((l) => /^Ran \d+ tests? in /.test(l)) ?? "(no result line)";
  const verdict = lines.at(-1) ?? "";
  console.log(`python: ${ran}: ${verdict}`);
  expect(code, output).toBe(0);
  expect(verdict).toMatch(/^OK\b/);
  expect(ran).toMatch(/^Ran [1-9]\d* tests? /);
}, 600_000);
