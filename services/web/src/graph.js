// A graph of tasks laid out by dagre, one connected component at a time, and drawn as SVG.
import dagre from "@dagrejs/dagre";
import htm from "htm";
import { h } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

const html = htm.bind(h);
const W = 190;
/** Above this many nodes, only those in view (and MARGIN pixels around it) are drawn. */
const CULL_ABOVE = 1500;
const MARGIN = 600;
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
  return { placed, lines, ...edgePaths(lines), width: width + 20, height: height + 20 };
}

/** The node a mouse event is over (one listener for the whole graph, not one a node). */
const nodeOf = (e) => e.target?.closest?.("g.node") ?? null;

/**
 * Every edge in one path, and every arrowhead in another: a graph of 10,000 tasks draws two
 * elements for its edges rather than 10,000.
 */
function edgePaths(lines) {
  const d = [];
  const a = [];
  for (const l of lines) {
    const pts = l.points;
    if (pts.length < 2) continue;
    d.push(`M${pts.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join("L")}`);
    const end = pts[pts.length - 1];
    const prev = pts[pts.length - 2];
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

const short = (id) => (id.length > 28 ? `…${id.slice(-27)}` : id);

/** The SVG: nodes coloured by `colour(node)`, hovering one shows its reasons, a click opens it. */
export function GraphView({ nodes, edges, colour, onOpen }) {
  const l = useMemo(() => layout(nodes, edges), [nodes, edges]);
  const [hover, setHover] = useState(null);
  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  // A large graph draws what is in view (and a margin around it), again as it scrolls.
  const wrap = useRef(null);
  const [view, setView] = useState({ x: 0, y: 0, w: 1600, h: 1200 });
  useEffect(() => {
    const el = wrap.current;
    if (!el) return undefined;
    const update = () =>
      setView({ x: el.scrollLeft, y: el.scrollTop, w: el.clientWidth, h: el.clientHeight });
    let frame = 0;
    const on = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(update);
    };
    update();
    el.addEventListener("scroll", on);
    addEventListener("resize", on);
    return () => {
      el.removeEventListener("scroll", on);
      removeEventListener("resize", on);
      cancelAnimationFrame(frame);
    };
  }, []);
  const cull = nodes.length > CULL_ABOVE;
  const inView = (x0, y0, x1, y1) =>
    !cull ||
    (x1 >= view.x - MARGIN &&
      x0 <= view.x + view.w + MARGIN &&
      y1 >= view.y - MARGIN &&
      y0 <= view.y + view.h + MARGIN);
  const paths = useMemo(() => {
    if (!cull) return l;
    return edgePaths(l.lines.filter((e) => e.points.some((p) => inView(p.x, p.y, p.x, p.y))));
  }, [l, cull, view]);
  return html`<div class="graph-wrap" ref=${wrap}>
    <svg
      class="graph"
      data-testid="graph"
      onMouseOver=${(e) => setHover(nodeOf(e)?.getAttribute("data-task") ?? null)}
      onMouseLeave=${() => setHover(null)}
      onClick=${(e) => {
        const n = byId.get(nodeOf(e)?.getAttribute("data-task"));
        if (n && !n.missing) onOpen?.(n);
      }}
      width=${l.width}
      height=${l.height}
      viewBox=${`-10 -10 ${l.width} ${l.height}`}
    >
      <path class="edge" d=${paths.edgePath} />
      <path class="arrow" d=${paths.arrowPath} />
      ${nodes.map((n) => {
        const p = l.placed.get(n.id);
        if (!p || !inView(p.x - W / 2, p.y - H / 2, p.x + W / 2, p.y + H / 2)) return null;
        const state = colour(n);
        return html`<g
          class=${`node s-${state}${n.missing ? " missing" : ""}${n.outside ? " outside" : ""}`}
          data-task=${n.id}
          data-state=${state}
          transform=${`translate(${p.x - W / 2},${p.y - H / 2})`}
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
