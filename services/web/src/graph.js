// A graph of tasks laid out by dagre, one connected component at a time, and drawn as SVG.
import dagre from "@dagrejs/dagre";
import htm from "htm";
import { h } from "preact";
import { useMemo, useState } from "preact/hooks";

const html = htm.bind(h);
const W = 190;
const H = 34;

/** Splits the graph into its connected components (each laid out on its own: dagre is superlinear). */
function components(nodes, edges) {
  const parent = new Map(nodes.map((n) => [n.id, n.id]));
  const find = (x) => {
    let r = x;
    while (parent.get(r) !== r) r = parent.get(r);
    while (parent.get(x) !== r) {
      const next = parent.get(x);
      parent.set(x, r);
      x = next;
    }
    return r;
  };
  for (const e of edges) if (parent.has(e.from) && parent.has(e.to)) parent.set(find(e.from), find(e.to));
  const groups = new Map();
  for (const n of nodes) {
    const r = find(n.id);
    if (!groups.has(r)) groups.set(r, { nodes: [], edges: [] });
    groups.get(r).nodes.push(n);
  }
  for (const e of edges) if (parent.has(e.from) && parent.has(e.to)) groups.get(find(e.to)).edges.push(e);
  return [...groups.values()].sort((a, b) => b.nodes.length - a.nodes.length);
}

/**
 * Layouts by shape: components with the same nodes (in the same order) and edges between the
 * same of them (the tasks of one workflow declared again and again, a task's partitions) share
 * one dagre layout, computed once.
 */
const shapes = new Map();
function layoutOfShape(comp) {
  const index = new Map(comp.nodes.map((n, i) => [n.id, i]));
  const pairs = comp.edges.map((e) => [index.get(e.from), index.get(e.to)]);
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
      return { x: n.x, y: n.y };
    }),
    lines: g.edges().map((e) => ({ from: Number(e.v), to: Number(e.w), points: g.edge(e).points })),
    width: g.graph().width,
    height: g.graph().height,
  };
  if (shapes.size > 2000) shapes.clear();
  shapes.set(key, shape);
  return shape;
}

/** Positions of every node and the points of every edge, components packed in rows. */
export function layout(nodes, edges) {
  const placed = new Map();
  const lines = [];
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  const maxWidth = 1240;
  for (const comp of components(nodes, edges)) {
    let w;
    let hgt;
    const local = new Map();
    const localLines = [];
    if (comp.nodes.length === 1) {
      local.set(comp.nodes[0].id, { x: W / 2, y: H / 2 });
      w = W;
      hgt = H;
    } else {
      const shape = layoutOfShape(comp);
      comp.nodes.forEach((n, i) => {
        local.set(n.id, shape.positions[i]);
      });
      for (const l of shape.lines)
        localLines.push({ from: comp.nodes[l.from].id, to: comp.nodes[l.to].id, points: l.points });
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
  return { placed, lines, width: width + 20, height: height + 20 };
}

const short = (id) => (id.length > 28 ? `…${id.slice(-27)}` : id);

/** The SVG: nodes coloured by `colour(node)`, hovering one shows its reasons, a click opens it. */
export function GraphView({ nodes, edges, colour, onOpen }) {
  const l = useMemo(() => layout(nodes, edges), [nodes, edges]);
  const [hover, setHover] = useState(null);
  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  return html`<div class="graph-wrap">
    <svg
      class="graph"
      data-testid="graph"
      width=${l.width}
      height=${l.height}
      viewBox=${`-10 -10 ${l.width} ${l.height}`}
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto">
          <path d="M0,0 L10,5 L0,10 z" fill="#888" />
        </marker>
      </defs>
      ${l.lines.map(
        (e) =>
          html`<polyline
            class="edge"
            marker-end="url(#arrow)"
            points=${e.points.map((p) => `${p.x},${p.y}`).join(" ")}
          />`,
      )}
      ${nodes.map((n) => {
        const p = l.placed.get(n.id);
        if (!p) return null;
        const state = colour(n);
        return html`<g
          class=${`node s-${state}${n.missing ? " missing" : ""}${n.outside ? " outside" : ""}`}
          data-task=${n.id}
          data-state=${state}
          transform=${`translate(${p.x - W / 2},${p.y - H / 2})`}
          onMouseEnter=${() => setHover(n.id)}
          onMouseLeave=${() => setHover(null)}
          onClick=${() => !n.missing && onOpen?.(n)}
        >
          <rect width=${W} height=${H} rx="5" />
          <text x="8" y="14">${short(n.id)}</text>
          <text x="8" y="28" class="sub">${n.missing ? "missing parent" : state}</text>
        </g>`;
      })}
    </svg>
    ${
      hover &&
      byId.get(hover) &&
      html`<div class="tooltip" data-testid="tooltip" style=${tooltipAt(l.placed.get(hover), l.width)}>
        <strong>${hover}</strong>
        <div>${byId.get(hover).condition}</div>
        <ul>
          ${(byId.get(hover).reasons ?? []).map((r) => html`<li>${r}</li>`)}
        </ul>
      </div>`
    }
  </div>`;
}

/** Beside the node: to its right, or to its left near the graph's right edge. */
const tooltipAt = (p, width) =>
  !p
    ? ""
    : p.x + W / 2 + 400 > width
      ? `left:${Math.max(0, p.x - W / 2 - 394)}px;top:${p.y}px`
      : `left:${p.x + W / 2 + 14}px;top:${p.y}px`;
