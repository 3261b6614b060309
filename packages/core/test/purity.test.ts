import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * packages/core is the functional core: it must import no Node built-in and no library that
 * does I/O. Time, ids and randomness arrive as data. This test reads every source file.
 */
const coreSrc = fileURLToPath(new URL("../src", import.meta.url));
const coreManifest = JSON.parse(
  readFileSync(fileURLToPath(new URL("../package.json", import.meta.url)), "utf8"),
);

/** Libraries core may import: pure computation only. */
const ALLOWED_PACKAGES = new Set(["zod", "cron-parser", "yaml", "luxon"]);
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
/** Globals through which code reaches the clock, randomness or the process. */
const FORBIDDEN_GLOBALS = [
  /\bDate\.now\s*\(/,
  /\bnew Date\(\s*\)/,
  /\bMath\.random\s*\(/,
  /\bprocess\./,
  /\brequire\s*\(/,
  /\bcrypto\./,
  /\bperformance\.now\s*\(/,
  /\bsetTimeout\s*\(/,
  /\bsetInterval\s*\(/,
  /\bfetch\s*\(/,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

function importsOf(text: string): string[] {
  const specifiers: string[] = [];
  const pattern =
    /(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|import\s+["']([^"']+)["']/g;
  for (const match of text.matchAll(pattern)) specifiers.push((match[1] ?? match[2] ?? match[3]) as string);
  return specifiers;
}

function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] as string);
}

describe("packages/core purity", () => {
  const files = sourceFiles(coreSrc);

  it("has source files to check", () => {
    expect(files.length).toBeGreaterThan(3);
  });

  it("imports no Node built-in and only allowed pure libraries", () => {
    const offences: string[] = [];
    for (const file of files) {
      for (const spec of importsOf(readFileSync(file, "utf8"))) {
        if (spec.startsWith(".")) continue;
        if (BUILTINS.has(spec) || spec.startsWith("node:"))
          offences.push(`${relative(coreSrc, file)} imports built-in ${spec}`);
        else if (!ALLOWED_PACKAGES.has(packageName(spec)))
          offences.push(`${relative(coreSrc, file)} imports ${spec}, not on the pure-library list`);
      }
    }
    expect(offences).toEqual([]);
  });

  it("reads no clock, randomness or process global", () => {
    const offences: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
      for (const pattern of FORBIDDEN_GLOBALS) {
        if (pattern.test(text)) offences.push(`${relative(coreSrc, file)} uses ${pattern.source}`);
      }
    }
    expect(offences).toEqual([]);
  });

  it("declares only allowed runtime dependencies", () => {
    const deps = Object.keys(coreManifest.dependencies ?? {});
    expect(deps.filter((d) => !ALLOWED_PACKAGES.has(d))).toEqual([]);
  });

  it("the check itself catches a built-in import", () => {
    expect(importsOf(`import { readFileSync } from "node:fs";\nimport x from 'pg';`)).toEqual([
      "node:fs",
      "pg",
    ]);
  });
});
