// Whether the CLI's bundle (services/cli/dist/bundle, made by scripts/bundle.mjs) holds the code
// of the latest build: it is fresh when it is newer than the build of every package it holds.
// A build (`tsc -b`) that rewrote a package after the bundle was made makes it stale, and the
// bin then runs the build itself, slower but never out of date.
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const cli = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = join(cli, "..", "..");
const BUILDS = [
  "packages/core",
  "packages/log",
  "packages/log-sqlite",
  "packages/log-kafka",
  "packages/log-eventstore",
  "packages/render",
  "packages/scheduler",
  "packages/worker",
  "services/api",
  "services/cli",
];

export const bundleDir = () => join(cli, "dist", "bundle");

const mtime = (file) => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
};

export function bundleIsFresh() {
  const made = mtime(join(bundleDir(), "main.cjs"));
  if (made === undefined) return false;
  for (const pkg of BUILDS) {
    const built = mtime(join(root, pkg, "dist", ".tsbuildinfo"));
    if (built !== undefined && built > made) return false;
  }
  return true;
}
