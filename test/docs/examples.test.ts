import { spawn } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, it } from "vitest";
import { Leftovers, tempDataDir } from "../support/cli.js";
import { codeBlocks, docPages, ROOT, readPage } from "./markdown.js";
import { SHELL_LANGS, shellCommands } from "./shell-commands.js";

/**
 * The README's and the docs' shell examples still work: each page's runnable blocks run in
 * order, command by command, in a fresh directory of its own (so `./.chronolog` is that page's
 * data directory, and `docs/examples` is the checkout's), with the built `chronolog` first on
 * the PATH. A block that cannot run here (a
 * Kafka broker, a server, a long-running `up`) says so with `<!-- not run: why -->` before its
 * fence, and is counted with its reason.
 */
const COMMAND_TIMEOUT_MS = 20_000;
const BIN = join(ROOT, "node_modules/.bin");

const left = new Leftovers();
const skipped = new Map<string, number>();
let ran = 0;

afterAll(() => {
  left.clear();
  const reasons = [...skipped].map(([why, n]) => `  ${n} x ${why}`).join("\n");
  const total = [...skipped.values()].reduce((a, b) => a + b, 0);
  console.log(`docs examples: ${ran} commands run; ${total} blocks not run:\n${reasons}`);
});

interface Outcome {
  readonly code: number | null;
  readonly output: string;
}

/** The environment of a reader's terminal: the defaults, the built binary on the PATH, no API. */
function pageEnv(): NodeJS.ProcessEnv {
  const { CHRONOLOG_DATA_DIR: _dir, CHRONOLOG_LOG: _log, ...rest } = process.env;
  return { ...rest, PATH: `${BIN}:${process.env.PATH ?? ""}`, CHRONOLOG_HTTP: "off" };
}

/**
 * Runs one command in bash in the page's directory. What the page's commands exported before
 * is read from `env` first, and what this one exports is written back, as in one terminal.
 */
function runCommand(dir: string, command: string): Promise<Outcome> {
  const env = join(dir, ".docs-env");
  const script = `set -o pipefail\n[ -f ${env} ] && . ${env}\n${command}\nrc=$?\nexport -p > ${env}\nexit $rc\n`;
  const child = spawn("bash", ["-c", script], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: pageEnv(),
  });
  let output = "";
  const take = (c: Buffer) => {
    output += c.toString();
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  const timer = setTimeout(() => child.kill("SIGKILL"), COMMAND_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe("the shell examples of the README and docs/", () => {
  for (const page of docPages()) {
    const blocks = codeBlocks(readPage(page)).filter((b) => SHELL_LANGS.has(b.lang));
    for (const b of blocks) {
      if (b.notRun !== undefined) skipped.set(b.notRun, (skipped.get(b.notRun) ?? 0) + 1);
    }
    const runnable = blocks.filter((b) => b.notRun === undefined);
    if (runnable.length === 0) continue;
    it.concurrent(`${page}: ${runnable.length} blocks run`, { timeout: 120_000 }, async ({ expect }) => {
      const dir = tempDataDir("docs");
      left.dirs.push(dir);
      // The examples name the example declarations as a reader at the checkout's root would.
      mkdirSync(join(dir, "docs"));
      symlinkSync(join(ROOT, "docs/examples"), join(dir, "docs/examples"));
      for (const block of runnable) {
        for (const command of shellCommands(block.lang, block.text)) {
          const r = await runCommand(dir, command);
          ran += 1;
          expect(r.code, `${page}:${block.line}: \`${command}\` exited ${r.code}:\n${r.output}`).toBe(0);
        }
      }
    });
  }
});
