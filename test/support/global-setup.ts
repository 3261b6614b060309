import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Black-box tests run the built CLI and packages in child processes: build them first. */
export default function setup(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  execFileSync(
    process.execPath,
    [fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url)), "-b"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
}
