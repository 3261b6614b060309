/**
 * A map from string keys (task ids) to values, with the behaviour of a `Map` (insertion order,
 * iterators that see what is added while they run, delete), made for the projection's
 * million-entry tables.
 *
 * Why not a `Map`: a restart of a scheduler holding a million tasks spent about a third of its
 * time inserting into two such maps. A `Map` cannot be given its size up front, so it is rebuilt
 * at each doubling, and each rebuild reads every key string again for its hash: a million
 * random reads of memory the restart has long left behind. Here the hash of each key is kept
 * beside it in a typed array; a table given its size (a checkpoint knows how many tasks it
 * holds) is never rebuilt, and one that grows rebuilds only its index of integers from those
 * hashes, without touching a key. The keys and values are two plain arrays in insertion order.
 *
 * Keys are hashed with FNV-1a and a final mix, from a seed each map takes when it is made: the
 * seed `seedIdMaps` last set. This package reads no randomness itself; a process that holds ids
 * others choose sets a random seed when it starts (the `chronolog` command does, first thing), so that no
 * set of ids chosen in advance collides in its maps. The seed changes no result, only how long
 * a look-up may take.
 */

const EMPTY = -1;
/** The index holds at least twice as many slots as entries: probes stay short. */
const LOAD = 2;
const MIN_SLOTS = 16;
let nextSeed = 0;

/** The seed of the maps made from now on (maps made before keep theirs). */
export function seedIdMaps(seed: number): void {
  nextSeed = seed | 0;
}

function hashOf(seed: number, key: string): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The smallest power of two that holds `entries` at the index's load. */
function slotsFor(entries: number): number {
  let slots = MIN_SLOTS;
  while (slots < entries * LOAD) slots *= 2;
  return slots;
}

type Kind = "keys" | "values" | "entries";

/** Where a walk through the entries is: the place to look from, and the clears it has seen. */
interface Walk {
  at: number;
  clears: number;
}

export class IdMap<V> implements Map<string, V> {
  /** Each slot: the place of an entry in `keys` (or EMPTY). A deleted entry keeps its slot. */
  private index: Int32Array;
  private mask: number;
  /** Each entry's hash, by its place. */
  private hashes: Int32Array;
  /** Each entry's key by its place; undefined once deleted. */
  private keyAt: Array<string | undefined> = [];
  private valueAt: Array<V | undefined> = [];
  /** Entries placed, deleted ones included. */
  private placed = 0;
  private live = 0;
  /**
   * Iterators not yet run to their end (nor collected, if left before it) and calls of
   * `forEach` under way: the entries are not moved while one may be at a place among them.
   */
  private open = 0;
  /** How many times the map was cleared: an iterator of an earlier count starts again at 0. */
  private clears = 0;
  private readonly seed = nextSeed;

  readonly [Symbol.toStringTag] = "IdMap";

  /** `expected`: how many entries the map will hold; it grows past that as it must. */
  constructor(expected = 0) {
    const slots = slotsFor(expected);
    this.index = new Int32Array(slots).fill(EMPTY);
    this.mask = slots - 1;
    this.hashes = new Int32Array(Math.max(expected, MIN_SLOTS / LOAD));
  }

  get size(): number {
    return this.live;
  }

  private find(key: string, h: number): number {
    const { index, mask, hashes, keyAt } = this;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const at = index[slot] as number;
      if (at === EMPTY) return EMPTY;
      if (hashes[at] === h && keyAt[at] === key) return at;
    }
  }

  get(key: string): V | undefined {
    const at = this.find(key, hashOf(this.seed, key));
    return at === EMPTY ? undefined : this.valueAt[at];
  }

  has(key: string): boolean {
    return this.find(key, hashOf(this.seed, key)) !== EMPTY;
  }

  set(key: string, value: V): this {
    const h = hashOf(this.seed, key);
    const at = this.find(key, h);
    if (at !== EMPTY) {
      this.valueAt[at] = value;
      return this;
    }
    if ((this.placed + 1) * LOAD > this.index.length) this.makeRoom();
    const place = this.placed++;
    if (place === this.hashes.length) {
      const hashes = new Int32Array(place * 2);
      hashes.set(this.hashes);
      this.hashes = hashes;
    }
    this.hashes[place] = h;
    this.keyAt.push(key);
    this.valueAt.push(value);
    this.live += 1;
    this.slot(h, place);
    return this;
  }

  /** Puts an entry's place in the first free slot of its probe. */
  private slot(h: number, place: number): void {
    const { index, mask } = this;
    let slot = h & mask;
    while (index[slot] !== EMPTY) slot = (slot + 1) & mask;
    index[slot] = place;
  }

  delete(key: string): boolean {
    const at = this.find(key, hashOf(this.seed, key));
    if (at === EMPTY) return false;
    this.keyAt[at] = undefined;
    this.valueAt[at] = undefined;
    this.live -= 1;
    return true;
  }

  clear(): void {
    this.index = new Int32Array(MIN_SLOTS).fill(EMPTY);
    this.mask = MIN_SLOTS - 1;
    this.hashes = new Int32Array(MIN_SLOTS / LOAD);
    this.keyAt = [];
    this.valueAt = [];
    this.placed = 0;
    this.live = 0;
    this.clears += 1;
  }

  /**
   * Before an entry is added to a full index: the entries are closed up if a third of them are
   * deleted (and no iterator is at a place among them), and the index is made again, twice as
   * large if the live entries still fill half of it.
   */
  private makeRoom(): void {
    if (this.open === 0 && (this.placed - this.live) * 3 >= this.placed) {
      const { keyAt, valueAt, hashes } = this;
      let to = 0;
      for (let from = 0; from < this.placed; from++) {
        const key = keyAt[from];
        if (key === undefined) continue;
        keyAt[to] = key;
        valueAt[to] = valueAt[from];
        hashes[to] = hashes[from] as number;
        to += 1;
      }
      keyAt.length = to;
      valueAt.length = to;
      this.placed = to;
    }
    const slots = slotsFor(this.placed + 1);
    this.index = new Int32Array(slots).fill(EMPTY);
    this.mask = slots - 1;
    const { hashes, keyAt } = this;
    for (let at = 0; at < this.placed; at++) if (keyAt[at] !== undefined) this.slot(hashes[at] as number, at);
  }

  forEach(callback: (value: V, key: string, map: Map<string, V>) => void, thisArg?: unknown): void {
    // As an iterator is: the callback may add and delete, and no entry moves meanwhile.
    this.open += 1;
    try {
      const walk: Walk = { at: 0, clears: this.clears };
      for (let at = this.advance(walk); at !== EMPTY; at = this.advance(walk))
        callback.call(thisArg, this.valueAt[at] as V, this.keyAt[at] as string, this);
    } finally {
      this.open -= 1;
    }
  }

  /**
   * The place of a walk's next entry that is not deleted (EMPTY: none), and the walk moved past
   * it. A walk of before a clear starts again at 0: what is there now was added after it, as a
   * Map gives it.
   */
  private advance(walk: Walk): number {
    if (walk.clears !== this.clears) {
      walk.clears = this.clears;
      walk.at = 0;
    }
    let at = walk.at;
    while (at < this.placed && this.keyAt[at] === undefined) at += 1;
    if (at >= this.placed) return EMPTY;
    walk.at = at + 1;
    return at;
  }

  /** For an iterator: the entry at a place, as the iterator's kind gives it. */
  private itemAt(at: number, kind: Kind): unknown {
    if (kind === "keys") return this.keyAt[at];
    if (kind === "values") return this.valueAt[at];
    return [this.keyAt[at], this.valueAt[at]];
  }

  keys(): MapIterator<string> {
    return new IdMapIterator(this, "keys");
  }

  values(): MapIterator<V> {
    return new IdMapIterator(this, "values");
  }

  entries(): MapIterator<[string, V]> {
    return new IdMapIterator(this, "entries");
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  /** @internal The iterators' way in. */
  static advance<V>(map: IdMap<V>, walk: Walk): number {
    return map.advance(walk);
  }
  /** @internal */
  static item<V>(map: IdMap<V>, at: number, kind: Kind): unknown {
    return map.itemAt(at, kind);
  }
  /** @internal */
  static opened<V>(map: IdMap<V>, by: number): void {
    map.open += by;
  }
  /** @internal */
  static clearsOf<V>(map: IdMap<V>): number {
    return map.clears;
  }
}

/** An iterator left before its end stops holding the entries in place once it is collected. */
const leftIterators = new FinalizationRegistry<IdMap<unknown>>((map) => IdMap.opened(map, -1));

/** Walks the entries by place, reading the map's length at each step (so sees what is added). */
class IdMapIterator<V, T> implements MapIterator<T> {
  private readonly walk: Walk;
  private done = false;

  constructor(
    private readonly map: IdMap<V>,
    private readonly kind: Kind,
  ) {
    IdMap.opened(map, 1);
    leftIterators.register(this, map as IdMap<unknown>, this);
    this.walk = { at: 0, clears: IdMap.clearsOf(map) };
  }

  next(): IteratorResult<T, undefined> {
    if (this.done) return { done: true, value: undefined };
    const at = IdMap.advance(this.map, this.walk);
    if (at === EMPTY) return this.return();
    return { done: false, value: IdMap.item(this.map, at, this.kind) as T };
  }

  return(): IteratorResult<T, undefined> {
    if (!this.done) {
      this.done = true;
      leftIterators.unregister(this);
      IdMap.opened(this.map, -1);
    }
    return { done: true, value: undefined };
  }

  [Symbol.iterator](): MapIterator<T> {
    return this;
  }
}
