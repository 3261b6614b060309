// A graph of tasks drawn as SVG, laid out by graph-layout.ts.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { type Edge, edgePaths, H, layout, type Point, W } from "./graph-layout";

/** Above this many nodes, only those in view (and MARGIN pixels around it) are drawn. */
const CULL_ABOVE = 1500;
const MARGIN = 600;

/** What the view draws of a node: the grid endpoint's graph nodes are these. */
export interface ViewNode {
  readonly id: string;
  readonly condition: string;
  readonly reasons: readonly string[];
  readonly missing?: boolean;
  readonly outside?: boolean;
}

/** The node a mouse event is over (one listener for the whole graph, not one a node). */
const nodeOf = (e: Event): Element | null => (e.target as Element | null)?.closest?.("g.node") ?? null;

const short = (id: string) => (id.length > 28 ? `…${id.slice(-27)}` : id);

/** The SVG: nodes coloured by `colour(node)`, hovering one shows its reasons, a click opens it. */
export function GraphView<N extends ViewNode>({
  nodes,
  edges,
  colour,
  onOpen,
}: {
  nodes: readonly N[];
  edges: readonly Edge[];
  colour: (node: N) => string;
  onOpen?: (node: N) => void;
}) {
  const l = useMemo(() => layout(nodes, edges), [nodes, edges]);
  const [hover, setHover] = useState<string | null>(null);
  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  // A large graph draws what is in view (and a margin around it), again as it scrolls.
  const wrap = useRef<HTMLDivElement>(null);
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
  const inView = (x0: number, y0: number, x1: number, y1: number) =>
    !cull ||
    (x1 >= view.x - MARGIN &&
      x0 <= view.x + view.w + MARGIN &&
      y1 >= view.y - MARGIN &&
      y0 <= view.y + view.h + MARGIN);
  const paths = useMemo(() => {
    if (!cull) return l;
    return edgePaths(l.lines.filter((e) => e.points.some((p) => inView(p.x, p.y, p.x, p.y))));
  }, [l, cull, view]);
  const hovered = hover === null ? undefined : byId.get(hover);
  return (
    <div class="graph-wrap" ref={wrap}>
      {/* biome-ignore lint/a11y/noSvgWithoutTitle: each node is labelled by its text; a title would show over every node */}
      {/* biome-ignore lint/a11y/useKeyWithClickEvents: a pointer view; every task it opens is a link on the grid */}
      {/* biome-ignore lint/a11y/useKeyWithMouseEvents: the hover tooltip repeats the grid's `now` column and its title */}
      <svg
        class="graph"
        data-testid="graph"
        onMouseOver={(e) => setHover(nodeOf(e)?.getAttribute("data-task") ?? null)}
        onMouseLeave={() => setHover(null)}
        onClick={(e) => {
          const n = byId.get(nodeOf(e)?.getAttribute("data-task") as string);
          if (n && !n.missing) onOpen?.(n);
        }}
        width={l.width}
        height={l.height}
        viewBox={`-10 -10 ${l.width} ${l.height}`}
      >
        <path class="edge" d={paths.edgePath} />
        <path class="arrow" d={paths.arrowPath} />
        {nodes.map((n) => {
          const p = l.placed.get(n.id);
          if (!p || !inView(p.x - W / 2, p.y - H / 2, p.x + W / 2, p.y + H / 2)) return null;
          const state = colour(n);
          return (
            <g
              class={`node s-${state}${n.missing ? " missing" : ""}${n.outside ? " outside" : ""}`}
              data-task={n.id}
              data-state={state}
              transform={`translate(${p.x - W / 2},${p.y - H / 2})`}
            >
              <rect width={W} height={H} rx="5" />
              <text x="8" y="14">
                {short(n.id)}
              </text>
              <text x="8" y="28" class="sub">
                {n.missing ? "missing parent" : state}
              </text>
            </g>
          );
        })}
      </svg>
      {hover && hovered && (
        <div class="tooltip" data-testid="tooltip" style={tooltipAt(l.placed.get(hover), l.width)}>
          <strong>{hover}</strong>
          <div>{hovered.condition}</div>
          <ul>
            {(hovered.reasons ?? []).map((r) => (
              <li>{r}</li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

/** Beside the node: to its right, or to its left near the graph's right edge. */
const tooltipAt = (p: Point | undefined, width: number): string =>
  !p
    ? ""
    : p.x + W / 2 + 400 > width
      ? `left:${Math.max(0, p.x - W / 2 - 394)}px;top:${p.y}px`
      : `left:${p.x + W / 2 + 14}px;top:${p.y}px`;
