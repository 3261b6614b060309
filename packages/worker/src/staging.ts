import { randomBytes } from "node:crypto";
import { readdirSync, rmdirSync } from "node:fs";
import { cp, lstat, mkdir, readdir, rename, rm, rmdir, writeFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";

/**
 * Staged outputs: an attempt writes into `<stagingRoot>/<token>/`, and only a successful attempt
 * has that directory published into its target with `rename`. A reader of the target never sees a
 * half-written file, and an attempt killed before success leaves nothing there.
 */

/** `<stagingRoot>/<token>`, the token made safe as one path segment. */
export function stagingDirFor(stagingRoot: string, token: string): string {
  let name = token.replace(/[^A-Za-z0-9._-]/g, "_");
  if (name === "" || name === "." || name === "..") name = `t_${name}`;
  return join(resolve(stagingRoot), name);
}

/** Creates an empty staging directory for the attempt (clearing one left by a crashed run of it). */
export async function prepareStagingDir(stagingRoot: string, token: string): Promise<string> {
  const dir = stagingDirFor(stagingRoot, token);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Removes a staging directory that holds nothing (and leaves one that holds something). */
export async function removeIfEmpty(stagingDir: string): Promise<void> {
  await rmdir(stagingDir).catch(() => {});
}

/**
 * Removes every empty attempt directory under the staging root (left by attempts killed before
 * they wrote anything), and returns how many. One that holds files stays: what a success
 * without `publishTo` staged is kept there. Call it only while no attempt can be preparing a
 * staging directory under the root (before the workers that use it start).
 */
export function removeEmptyStagingDirs(stagingRoot: string): number {
  let names: string[];
  try {
    names = readdirSync(stagingRoot);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    try {
      rmdirSync(join(stagingRoot, name));
      removed += 1;
    } catch {
      // not empty, or not a directory: kept
    }
  }
  return removed;
}

/** Removes a staging directory and everything in it. */
export async function discardStaged(stagingDir: string): Promise<void> {
  await rm(stagingDir, { recursive: true, force: true });
}

/**
 * Writes one output file of a node task into its staging directory (creating subdirectories).
 * `relativePath` must stay inside the staging directory. Returns the file's absolute path.
 */
export async function stagedWrite(
  stagingDir: string,
  relativePath: string,
  data: string | Uint8Array,
): Promise<string> {
  const root = resolve(stagingDir);
  const path = resolve(root, relativePath);
  const rel = relative(root, path);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    throw new Error(`staged path ${JSON.stringify(relativePath)} leaves the staging directory`);
  }
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, data);
  return path;
}

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if (code(err) === "ENOENT") return false;
    throw err;
  }
}

/**
 * `rename(src, dst)`; across filesystems (EXDEV), a copy to a hidden temporary name next to `dst`
 * and then a rename, so `dst` still appears whole or not at all.
 */
async function moveAtomic(src: string, dst: string): Promise<void> {
  try {
    await rename(src, dst);
  } catch (err) {
    if (code(err) !== "EXDEV") throw err;
    const tmp = join(dirname(dst), `.${basename(dst)}.chronolog-${randomBytes(6).toString("hex")}`);
    try {
      await cp(src, tmp, { recursive: true, preserveTimestamps: true });
      await rename(tmp, dst);
    } catch (copyErr) {
      await rm(tmp, { recursive: true, force: true });
      throw copyErr;
    }
    await rm(src, { recursive: true, force: true });
  }
}

/** Moves every entry of `src` into the existing directory `dst`, merging into subdirectories. */
async function mergeInto(src: string, dst: string, published: string[]): Promise<void> {
  for (const name of await readdir(src)) {
    const from = join(src, name);
    const to = join(dst, name);
    const [fromStat, toExists] = await Promise.all([lstat(from), exists(to)]);
    if (fromStat.isDirectory() && toExists && (await lstat(to)).isDirectory()) {
      await mergeInto(from, to, published);
    } else {
      await moveAtomic(from, to);
      published.push(to);
    }
  }
}

/**
 * Publishes a staging directory into `targetDir` and returns the published paths. When the target
 * does not exist yet, the whole staging directory is renamed into place in one step; otherwise
 * each entry is renamed into it (a file replaces an older one atomically; directories merge).
 */
export async function publishStaged(stagingDir: string, targetDir: string): Promise<string[]> {
  const src = resolve(stagingDir);
  const dst = resolve(targetDir);
  const names = await readdir(src);
  await mkdir(dirname(dst), { recursive: true });
  if (!(await exists(dst))) {
    try {
      await moveAtomic(src, dst);
      return names.map((n) => join(dst, n));
    } catch (err) {
      // Someone created the target meanwhile: merge into it instead.
      if (!["EEXIST", "ENOTEMPTY", "ENOTDIR"].includes(code(err) ?? "") || !(await exists(dst))) throw err;
    }
  }
  const published: string[] = [];
  await mergeInto(src, dst, published);
  await rm(src, { recursive: true, force: true });
  return published;
}
