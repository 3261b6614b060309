// Runs every benchmark under bench/ (or those named on the command line), one after another.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cliNodeFlags } from "./table.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const build = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b"], {
  cwd: root,
  stdio: "inherit",
});
if (build.status !== 0) process.exit(build.status ?? 1);
// The CLI as users run it: from its bundle (services/cli/scripts/bundle.mjs).
const bundle = spawnSync(process.execPath, [join(root, "services/cli/scripts/bundle.mjs"), "--if-stale"], {
  cwd: root,
  stdio: "inherit",
});
if (bundle.status !== 0) process.exit(bundle.status ?? 1);
const web = spawnSync(
  process.execPath,
  [join(root, "node_modules/vite/bin/vite.js"), "build", "services/web"],
  {
    cwd: root,
    stdio: "inherit",
  },
);
if (web.status !== 0) process.exit(web.status ?? 1);
const wanted = process.argv.slice(2);
const benches = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, "index.mjs")))
  .map((d) => d.name)
  .filter((name) => wanted.length === 0 || wanted.includes(name));
let failed = 0;
for (const name of benches) {
  console.log(`\n=== bench/${name} ===`);
  // The scheduler runs in the bench's process: with the node flags the `chronolog` command uses.
  const r = spawnSync(process.execPath, ["--expose-gc", ...cliNodeFlags(), join(here, name, "index.mjs")], {
    cwd: root,
    stdio: "inherit",
  });
  if (r.status !== 0) failed += 1;
}
process.exit(failed ? 1 : 0);
