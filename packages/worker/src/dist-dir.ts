import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * A file of this package's build (packages/worker/dist), found through the package's own name,
 * so that it is the same file whether this code runs from the build, from its sources, or
 * bundled into another program (the CLI is).
 */
export function workerDistFile(name: string): string {
  return join(dirname(createRequire(import.meta.url).resolve("@chronolog/worker")), name);
}
