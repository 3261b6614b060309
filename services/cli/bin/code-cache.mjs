// A code cache for the CLI's bundle: V8's compiled code of each file of the bundle, kept between
// commands so that a command's start deserializes what the last command compiled instead of
// parsing and compiling about 2 MB of JavaScript again. Node 20 keeps no such cache of its own
// (module.enableCompileCache came in 22), so the bundle is CommonJS and its files are compiled
// here with vm.Script, which takes and makes V8's cached data.
//
// Safe to lose, to find stale and to find broken: a file's cache is used only when its header
// names the same bundle file, contents, Node and V8 (a hash of them all) and the data's own hash
// (V8 itself checks only the data's length and versions, not its bytes); V8 checks it again and
// rejects what it cannot use, and the file is then compiled from its text as if there were no
// cache. A cache is written (to a file of its own, then renamed over the old one) when
// the process ends, for each file compiled without one, so that it holds the functions the
// command compiled as it ran. Nothing here makes a command fail: an error reading or writing
// the cache leaves the command to run uncached.
//
// A file's cache is kept per set of Node flags (V8 takes only data made under the same flags),
// and the directory holds at most MAX_FILES files: the oldest written go first.
//
// Where: $CHRONOLOG_CODE_CACHE if set (a directory; "off" turns the cache off), else
// $XDG_CACHE_HOME/chronolog/code, else ~/.cache/chronolog/code. The directory is made for the
// user alone (0700) and used only when it is the user's own and no one else may write in it.
import { createHash } from "node:crypto";
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import Module from "node:module";
import { homedir } from "node:os";
import { dirname, join, sep } from "node:path";
import { Script } from "node:vm";

const MAGIC = "chronolog-code-cache 1\n";
// The magic line, then the key and the data's own sha-256, in hex, a line each.
const HEADER_BYTES = MAGIC.length + 65 + 65;

/** The cache's directory from the environment, or null when it is turned off. */
export function codeCacheDir(env = process.env) {
  const set = env.CHRONOLOG_CODE_CACHE;
  if (set === "off" || set === "0") return null;
  if (set) return set;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "chronolog", "code");
  let home;
  try {
    home = homedir();
  } catch {
    return null;
  }
  return home ? join(home, ".cache", "chronolog", "code") : null;
}

/** Makes the directory (the user's alone) and says whether it may be used. */
function usableDir(dir) {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = statSync(dir);
    const uid = process.getuid?.();
    if (!st.isDirectory()) return false;
    // Code read from a directory another user may write in could be anyone's.
    if (uid !== undefined && st.uid !== uid) return false;
    return (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** The hash a cache file must carry: the bundle file's path and text, Node's and V8's versions. */
function keyOf(filename, source) {
  return createHash("sha256")
    .update(`${filename}\0${process.version}\0${process.versions.v8}\0${process.arch}\0`)
    .update(source)
    .digest("hex");
}

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/** The cached data in a cache file, when its header carries the key; else undefined. */
function readCache(file, key) {
  let fd;
  try {
    fd = openSync(file, "r");
    const size = fstatSync(fd).size;
    if (size <= HEADER_BYTES) return undefined;
    const buffer = Buffer.allocUnsafe(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buffer, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    if (read !== size) return undefined;
    if (buffer.toString("latin1", 0, MAGIC.length + 65) !== `${MAGIC}${key}\n`) return undefined;
    const data = buffer.subarray(HEADER_BYTES);
    const sum = buffer.toString("latin1", MAGIC.length + 65, HEADER_BYTES);
    return sum === `${sha256(data)}\n` ? data : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function writeCache(file, key, data) {
  const next = `${file}.${process.pid}.next`;
  try {
    const header = Buffer.from(`${MAGIC}${key}\n${sha256(data)}\n`, "latin1");
    writeFileSync(next, Buffer.concat([header, data]), { mode: 0o600 });
    renameSync(next, file);
  } catch {
    try {
      unlinkSync(next);
    } catch {}
  }
}

/**
 * Compiles the CommonJS files under `root` (the bundle's directory) through the code cache in
 * `dir`. Other files load as Node loads them.
 */
export function installCodeCache(root, dir = codeCacheDir()) {
  if (dir === null || !usableDir(dir)) return false;
  const prefix = root.endsWith(sep) ? root : `${root}${sep}`;
  const toWrite = [];
  const compile = Module.prototype._compile;
  Module.prototype._compile = function compileCached(content, filename) {
    if (!filename.startsWith(prefix) || !filename.endsWith(".cjs"))
      return compile.call(this, content, filename);
    const key = keyOf(filename, content);
    const file = cacheFileOf(dir, filename);
    const cachedData = readCache(file, key);
    const script = new Script(Module.wrap(content), { filename, cachedData });
    // None, or one V8 rejected: written at the end, with what this command compiled.
    if (cachedData === undefined || script.cachedDataRejected) toWrite.push({ script, file, key });
    const fn = script.runInThisContext({ displayErrors: true });
    return fn.call(this.exports, this.exports, requireOf(this), this, filename, dirname(filename));
  };
  process.once("exit", () => {
    for (const { script, file, key } of toWrite) {
      try {
        writeCache(file, key, script.createCachedData());
      } catch {}
    }
    if (toWrite.length > 0) prune(dir);
  });
  return true;
}

/** A module's `require`, as Node makes it for the files it compiles itself. */
function requireOf(mod) {
  const require = (id) => mod.require(id);
  require.resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
  require.resolve.paths = (request) => Module._resolveLookupPaths(request, mod);
  require.main = process.mainModule;
  require.extensions = Module._extensions;
  require.cache = Module._cache;
  return require;
}

/**
 * The file in the cache's directory that holds a bundle file's cache, for Node started with the
 * flags of this process: V8 rejects data made under other flags (the bin's, a profiler's), so
 * each set keeps its own instead of writing over the other's at every command.
 */
export const cacheFileOf = (dir, filename, execArgv = process.execArgv) =>
  join(
    dir,
    `${createHash("sha256")
      .update(`${filename}\0${execArgv.join("\0")}`)
      .digest("hex")
      .slice(0, 32)}.bin`,
  );

/** Cache files kept at most: past it, the oldest written go (each build names its files anew). */
export const MAX_FILES = 128;

/** Removes the oldest cache files past MAX_FILES. */
function prune(dir) {
  try {
    const files = readdirSync(dir)
      .filter((f) => f.endsWith(".bin"))
      .map((f) => {
        try {
          return { f, at: statSync(join(dir, f)).mtimeMs };
        } catch {
          return { f, at: 0 };
        }
      });
    if (files.length <= MAX_FILES) return;
    files.sort((a, b) => a.at - b.at);
    for (const { f } of files.slice(0, files.length - MAX_FILES)) {
      try {
        unlinkSync(join(dir, f));
      } catch {}
    }
  } catch {}
}
