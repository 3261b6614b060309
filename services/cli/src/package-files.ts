import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * A file of the CLI's package (its package.json, its examples), found through the package's own
 * name: the same file whether the CLI runs from its build or from its bundle.
 */
export function cliFile(name: string): string {
  return join(dirname(createRequire(import.meta.url).resolve("chronolog")), "..", name);
}

/** The CLI's version, from its package.json. */
export const cliVersion = (): string =>
  (JSON.parse(readFileSync(cliFile("package.json"), "utf8")) as { version: string }).version;
