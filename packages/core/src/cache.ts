/**
 * Puts `value` in a cache that is emptied whenever it reaches `limit` entries, and returns it:
 * the memo of a pure function whose questions repeat in bursts (the same schedules, the same
 * intervals), bounded without the bookkeeping of an LRU.
 */
export function remember<K, V>(cache: Map<K, V>, key: K, value: V, limit = 2048): V {
  if (cache.size >= limit) cache.clear();
  cache.set(key, value);
  return value;
}
