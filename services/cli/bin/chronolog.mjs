#!/bin/sh
//usr/bin/env true; exec node --max-semi-space-size=32 --min-semi-space-size=32 --heap-growing-percent=50 "$0" "$@"
// The line above is read twice. The shell runs `true` (through `//usr/bin/env`, a path the
// shell reads as `/usr/bin/env`), then replaces itself with node: the same process, so a signal
// to the command reaches node. Node reads that line as a comment. The flags it passes are a larger
// young generation (32 MiB semi-spaces, 64 MiB in all, twice Node's default): the scheduler
// allocates many short-lived objects per event, and fewer, larger scavenges cost less in all;
// and that size from the start, not grown from 1 MiB: a short command (a read decoding a few
// blocks of a checkpoint) then makes no scavenge or one, where growing it made nine, each
// copying what the command holds (the bundle's code, the blocks it read) once more. The last
// bounds the old generation's growth: after each full collection V8 lets it grow to 1.5 times
// what lived (by default up to 4 times, when objects are promoted fast, as a settle of many
// tasks promotes them), so the resident memory of `chronolog up` follows what it holds rather
// than the garbage it made: about half the peak at 100,000 tasks, for a few more full
// collections (see docs/benchmarks.md, bench/scale).
// Node takes them only on its command line; set from inside the process, the heap is sized already.
// The bundle of the build when it is fresh (a few files to read instead of hundreds, compiled
// through the code cache, see code-cache.mjs), else the build.
const { bundleDir, bundleIsFresh } = await import("./fresh.mjs");
if (bundleIsFresh()) {
  const { installCodeCache } = await import("./code-cache.mjs");
  installCodeCache(bundleDir());
  const { createRequire } = await import("node:module");
  createRequire(import.meta.url)("../dist/bundle/main.cjs");
} else await import("../dist/main.js");
