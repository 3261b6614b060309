/** Blocks this thread for `ms` milliseconds: for a short wait where nothing else may run. */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
