import { execFileSync } from "node:child_process";
import { chmodSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Run as root, the suites run tasks (and, in the isolation suite, the CLI itself) as `nobody`,
 * which must reach the checkout's built code: a directory above it that others may not search
 * (a clone under `mktemp -d`, say) gets search permission for others, and nothing more (no
 * listing, no reading, no writing). Says so for each directory it opens.
 */
function letTasksReachCheckout(root: string): void {
  if (process.getuid?.() !== 0) return;
  for (let dir = root; ; dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777;
    if ((mode & 0o001) === 0) {
      chmodSync(dir, mode | 0o001);
      console.log(`test setup: ${dir} may now be searched by other users (tasks run as nobody)`);
    }
    if (dirname(dir) === dir) break;
  }
}

/**
 * Black-box tests run the built CLI and packages in child processes, and the browser tests the
 * built web UI the API serves: build them first.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  letTasksReachCheckout(root);
  const bin = (p: string) => fileURLToPath(new URL(`../../node_modules/${p}`, import.meta.url));
  execFileSync(process.execPath, [bin("typescript/bin/tsc"), "-b"], { cwd: root, stdio: "inherit" });
  execFileSync(process.execPath, ["services/cli/scripts/bundle.mjs", "--if-stale"], {
    cwd: root,
    stdio: "inherit",
  });
  execFileSync(process.execPath, [bin("vite/bin/vite.js"), "build", "services/web"], {
    cwd: root,
    stdio: "inherit",
  });
}
