import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Black-box tests run the built CLI and packages in child processes, and the browser tests the
 * built web UI the API serves: build them first.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const bin = (p: string) => fileURLToPath(new URL(`../../node_modules/${p}`, import.meta.url));
  execFileSync(process.execPath, [bin("typescript/bin/tsc"), "-b"], { cwd: root, stdio: "inherit" });
  execFileSync(process.execPath, [bin("vite/bin/vite.js"), "build", "services/web"], {
    cwd: root,
    stdio: "inherit",
  });
}
