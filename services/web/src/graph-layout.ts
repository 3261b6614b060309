// A graph of tasks laid out by dagre, one connected component at a time: pure functions.
import dagre from "@dagrejs/dagre";

/** A node's width and height, in pixels. */
export const W = 190;
export const H = 48;

export interface Point {
  readonly x: number;
  readonly y: number;
}
export interface Edge {
  readonly from: string;
  readonly to: string;
}
export interface Line extends Edge {
  readonly points: readonly Point[];
}
interface Component<N> {
  readonly nodes: N[];
  readonly edges: Edge[];
}
interface Shape {
  readonly positions: readonly Point[];
  readonly lines: ReadonlyArray<{ from: number; to: number; points: readonly Point[] }>;
  readonly width: number;
  readonly height: number;
}
export interface Layout extends EdgePaths {
  readonly placed: ReadonlyMap<string, Point>;
  readonly lines: readonly Line[];
  readonly width: number;
  readonly height: number;
}
export interface EdgePaths {
  readonly edgePath: string;
  readonly arrowPath: string;
}

/** Splits the graph into its connected components (each laid out on its own: dagre is superlinear). */
function components<N extends { id: string }>(nodes: readonly N[], edges: readonly Edge[]): Component<N>[] {
  const parent = new Map(nodes.map((n) => [n.id, n.id]));
  const find = (x: string): string => {
    let r = x;
    while (parent.get(r) !== r) r = parent.get(r) as string;
    while (parent.get(x) !== r) {
      const next = parent.get(x) as string;
      parent.set(x, r);
      x = next;
    }
    return r;
  };
  for (const e of edges) if (parent.has(e.from) && parent.has(e.to)) parent.set(find(e.from), find(e.to));
  const groups = new Map<string, Component<N>>();
  for (const n of nodes) {
    const r = find(n.id);
    if (!groups.has(r)) groups.set(r, { nodes: [], edges: [] });
    groups.get(r)?.nodes.push(n);
  }
  for (const e of edges) if (parent.has(e.from) && parent.has(e.to)) groups.get(find(e.to))?.edges.push(e);
  return [...groups.values()].sort((a, b) => b.nodes.length - a.nodes.length);
}

/**
 * Layouts by shape: components with the same nodes (in the same order) and edges between the
 * same of them (the tasks of one workflow declared again and again, a task's partitions) share
 * one dagre layout, computed once.
 */
const shapes = new Map<string, Shape>();
function layoutOfShape<N extends { id: string }>(comp: Component<N>): Shape {
  const index = new Map(comp.nodes.map((n, i) => [n.id, i]));
  const pairs = comp.edges.map((e) => [index.get(e.from) as number, index.get(e.to) as number] as const);
  const key = `${comp.nodes.length}|${pairs.map((p) => p.join(">")).join(",")}`;
  let shape = shapes.get(key);
  if (shape) return shape;
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 12, ranksep: 50, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  comp.nodes.forEach((_, i) => {
    g.setNode(String(i), { width: W, height: H });
  });
  for (const [a, b] of pairs) g.setEdge(String(a), String(b));
  dagre.layout(g);
  shape = {
    positions: comp.nodes.map((_, i) => {
      const n = g.node(String(i));
      return { x: n.x as number, y: n.y as number };
    }),
    lines: g.edges().map((e) => ({ from: Number(e.v), to: Number(e.w), points: g.edge(e).points ?? [] })),
    width: g.graph().width as number,
    height: g.graph().height as number,
  };
  if (shapes.size > 2000) shapes.clear();
  shapes.set(key, shape);
  return shape;
}

/** Positions of every node and the points of every edge, components packed in rows. */
export function layout<N extends { id: string }>(nodes: readonly N[], edges: readonly Edge[]): Layout {
  const placed = new Map<string, Point>();
  const lines: Line[] = [];
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  const maxWidth = 1240;
  for (const comp of components(nodes, edges)) {
    let w: number;
    let hgt: number;
    const local = new Map<string, Point>();
    const localLines: Line[] = [];
    if (comp.nodes.length === 1) {
      local.set((comp.nodes[0] as N).id, { x: W / 2, y: H / 2 });
      w = W;
      hgt = H;
    } else {
      const shape = layoutOfShape(comp);
      comp.nodes.forEach((n, i) => {
        local.set(n.id, shape.positions[i] as Point);
      });
      for (const l of shape.lines)
        localLines.push({
          from: (comp.nodes[l.from] as N).id,
          to: (comp.nodes[l.to] as N).id,
          points: l.points,
        });
      w = shape.width;
      hgt = shape.height;
    }
    if (x > 0 && x + w > maxWidth) {
      x = 0;
      y += rowHeight + 30;
      rowHeight = 0;
    }
    for (const [id, p] of local) placed.set(id, { x: p.x + x, y: p.y + y });
    for (const l of localLines)
      lines.push({ ...l, points: l.points.map((p) => ({ x: p.x + x, y: p.y + y })) });
    x += w + 40;
    rowHeight = Math.max(rowHeight, hgt);
  }
  let width = 0;
  let height = 0;
  for (const p of placed.values()) {
    width = Math.max(width, p.x + W / 2);
    height = Math.max(height, p.y + H / 2);
  }
  return { placed, lines, ...edgePaths(lines), width: width + 20, height: height + 20 };
}

/**
 * Every edge in one path, and every arrowhead in another: a graph of 10,000 tasks draws two
 * elements for its edges rather than 10,000.
 */
export function edgePaths(lines: readonly Line[]): EdgePaths {
  const d: string[] = [];
  const a: string[] = [];
  for (const l of lines) {
    const pts = l.points;
    if (pts.length < 2) continue;
    d.push(`M${pts.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join("L")}`);
    const end = pts[pts.length - 1] as Point;
    const prev = pts[pts.length - 2] as Point;
    const len = Math.hypot(end.x - prev.x, end.y - prev.y) || 1;
    const ux = (end.x - prev.x) / len;
    const uy = (end.y - prev.y) / len;
    const bx = end.x - ux * 7;
    const by = end.y - uy * 7;
    a.push(
      `M${end.x.toFixed(1)},${end.y.toFixed(1)}L${(bx - uy * 3.5).toFixed(1)},${(by + ux * 3.5).toFixed(1)}L${(bx + uy * 3.5).toFixed(1)},${(by - ux * 3.5).toFixed(1)}Z`,
    );
  }
  return { edgePath: d.join(""), arrowPath: a.join("") };
}
