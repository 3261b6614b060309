// Bundles the built CLI (services/cli/dist, from `tsc -b`) into services/cli/dist/bundle: a few
// files instead of the five hundred modules Node would otherwise find, read and link at every
// command, which was most of a short command's time. Each command's module, imported when the
// command runs (src/commands.ts), is a chunk of its own with what only it needs, so a command
// reads and compiles little more than its own code. The command's code is the same: the bin
// runs the bundle only when it is newer than every package's build (see bin/fresh.mjs).
//
// Left outside, loaded from node_modules as before: native code (better-sqlite3), libraries
// that start threads or read files of their own beside their modules (pino and its
// transports), and the clients of the other logs (loaded only on those logs).
import { mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";
import { bundleDir, bundleIsFresh } from "../bin/fresh.mjs";

const EXTERNAL = [
  "better-sqlite3",
  "pino",
  "pino-pretty",
  "thread-stream",
  "kafkajs",
  "@eventstore/db-client",
];
const OWN_MODULE = /[\\/](?:packages|services)[\\/][^\\/]+[\\/]dist[\\/]/;
const external = (id) => EXTERNAL.some((name) => id === name || id.startsWith(`${name}/`));

/**
 * commander loads child_process at its start (and with it net and dgram: about 5 ms of every
 * command) to run a subcommand that is a program of its own, which this CLI has none of: the
 * module is loaded when a subcommand spawns, not before.
 */
const lazyChildProcess = {
  name: "lazy-child-process",
  transform(code, id) {
    if (!/[\\/]commander[\\/]lib[\\/]command\.js$/.test(id)) return null;
    const eager = "const childProcess = require('node:child_process');";
    if (!code.includes(eager)) throw new Error(`${id} no longer loads child_process as the bundle expects`);
    return code.replace(
      eager,
      "const childProcess = { get spawn() { return require('node:child_process').spawn; } };",
    );
  },
};

const cli = join(dirname(fileURLToPath(import.meta.url)), "..");
if (process.argv.includes("--if-stale") && bundleIsFresh()) process.exit(0);
const out = bundleDir();
const next = `${out}.next`;
rmSync(next, { recursive: true, force: true });
mkdirSync(next, { recursive: true });
await build({
  input: join(cli, "dist", "main.js"),
  platform: "node",
  external,
  logLevel: "warn",
  plugins: [lazyChildProcess],
  // The project's own modules do nothing at load that another module relies on (no module is
  // imported for its effects alone): one whose exports a command does not use is left out of that
  // command's chunks, so that a read does not load the declaration's validation or the worker.
  treeshake: { moduleSideEffects: (id, external) => external || !OWN_MODULE.test(id) },
  // CommonJS, so that each file can be compiled through V8's code cache (bin/code-cache.mjs);
  // a command's modules are chunks of their own, loaded when it runs (src/commands.ts).
  output: { dir: next, format: "cjs", entryFileNames: "main.cjs", chunkFileNames: "[name]-[hash].cjs" },
});
// Replaced whole: a command started meanwhile runs the old bundle or the new one, never a mix.
rmSync(out, { recursive: true, force: true });
renameSync(next, out);
