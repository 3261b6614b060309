/**
 * Cycle detection over a directed graph given as adjacency lists (`node -> successors`). Node and
 * successor order never matters: both are visited in sorted order, so the answer is deterministic.
 * A cycle is returned in path order with its first node repeated at the end: `[a, b, a]`.
 */
export type Edges = ReadonlyMap<string, Iterable<string>> | Readonly<Record<string, Iterable<string>>>;

/** The first cycle (see `findCycles`), or `undefined` when the graph is acyclic. */
export function findCycle(edges: Edges): string[] | undefined {
  return findCycles(edges)[0];
}

/**
 * One cycle per strongly connected component that has one (a component of two or more nodes, or
 * a node that is its own successor). Each cycle is the shortest one through its start node, which
 * is the smallest node of the component for which `preferStart` holds (the smallest node when
 * none does). Cycles are ordered by their start node.
 */
export function findCycles(edges: Edges, preferStart?: (node: string) => boolean): string[][] {
  if (isAcyclic(edges)) return [];
  const graph = normalise(edges);
  const cycles: string[][] = [];
  for (const component of stronglyConnected(graph)) {
    const first = component[0] as string;
    if (component.length === 1 && !(graph.get(first) ?? []).includes(first)) continue;
    const members = new Set(component);
    const start = (preferStart && component.find(preferStart)) || first;
    cycles.push(shortestCycleThrough(graph, members, start));
  }
  return cycles.sort((a, b) => compare(a[0] as string, b[0] as string));
}

/**
 * Whether the graph has no cycle: Kahn's algorithm over the nodes numbered as met, in linear
 * time with no sorting. The common answer for a catalogue of many thousands of tasks, where
 * finding and ordering the cycles (strings sorted, Tarjan's maps) took most of a second.
 */
function isAcyclic(edges: Edges): boolean {
  const numbers = new Map<string, number>();
  const successors: number[][] = [];
  const numberOf = (node: string): number => {
    let n = numbers.get(node);
    if (n === undefined) {
      n = successors.length;
      numbers.set(node, n);
      successors.push([]);
    }
    return n;
  };
  for (const [node, next] of entriesOf(edges)) {
    const list = successors[numberOf(node)] as number[];
    for (const s of next) list.push(numberOf(s));
  }
  const incoming = new Uint32Array(successors.length);
  for (const list of successors) for (const s of list) incoming[s] = (incoming[s] as number) + 1;
  const ready: number[] = [];
  for (let n = 0; n < successors.length; n++) if (incoming[n] === 0) ready.push(n);
  let removed = 0;
  while (ready.length > 0) {
    const n = ready.pop() as number;
    removed += 1;
    for (const s of successors[n] as number[]) {
      incoming[s] = (incoming[s] as number) - 1;
      if (incoming[s] === 0) ready.push(s);
    }
  }
  return removed === successors.length;
}

/** Each node with its successors, from either form of `Edges`. */
function entriesOf(edges: Edges): Iterable<[string, Iterable<string>]> {
  // A map of any kind (a record's values are lists, never functions).
  const map = edges as ReadonlyMap<string, Iterable<string>>;
  return typeof map.entries === "function"
    ? map.entries()
    : Object.entries(edges as Record<string, Iterable<string>>);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function normalise(edges: Edges): Map<string, string[]> {
  const graph = new Map<string, Set<string>>();
  for (const [node, successors] of entriesOf(edges)) {
    const set = graph.get(node) ?? new Set<string>();
    graph.set(node, set);
    for (const s of successors) {
      set.add(s);
      if (!graph.has(s)) graph.set(s, new Set());
    }
  }
  const out = new Map<string, string[]>();
  for (const node of [...graph.keys()].sort(compare)) {
    out.set(node, [...(graph.get(node) ?? [])].sort(compare));
  }
  return out;
}

/** Tarjan's algorithm, iterative (no recursion limit); each component's nodes sorted. */
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;

  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const frames: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter);
    counter++;
    stack.push(root);
    onStack.add(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1] as { node: string; next: number };
      const successors = graph.get(frame.node) ?? [];
      if (frame.next < successors.length) {
        const s = successors[frame.next++] as string;
        if (!index.has(s)) {
          index.set(s, counter);
          low.set(s, counter);
          counter++;
          stack.push(s);
          onStack.add(s);
          frames.push({ node: s, next: 0 });
        } else if (onStack.has(s)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(s) as number));
        }
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent)
        low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        for (;;) {
          const n = stack.pop() as string;
          onStack.delete(n);
          component.push(n);
          if (n === frame.node) break;
        }
        components.push(component.sort(compare));
      }
    }
  }
  return components;
}

/** Breadth-first search from `start` back to itself inside one component. */
function shortestCycleThrough(graph: Map<string, string[]>, members: Set<string>, start: string): string[] {
  const previous = new Map<string, string>();
  const queue: string[] = [start];
  const seen = new Set<string>([start]);
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i] as string;
    for (const s of graph.get(node) ?? []) {
      if (!members.has(s)) continue;
      if (s === start) {
        const path = [start];
        for (let n: string | undefined = node; n !== undefined && n !== start; n = previous.get(n)) {
          path.push(n);
        }
        const cycle = [start, ...path.slice(1).reverse(), start];
        return cycle;
      }
      if (seen.has(s)) continue;
      seen.add(s);
      previous.set(s, node);
      queue.push(s);
    }
  }
  // Unreachable for a strongly connected component; keep the type honest.
  return [start, start];
}
