// A graph of tasks drawn as SVG, laid out by graph-layout.ts.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { type Edge, edgePaths, H, layout, W } from "./graph-layout";

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

/** Characters a node's line holds at its font size. */
const FITS = 30;

/**
 * A node's label, two lines: `project/account` and the name (with its partition unless `ALL`).
 * A line too long is cut in its middle, so the project and the end of the name both stay.
 */
export function nodeLabel(id: string): [string, string] {
  const [project = "", account = "", name = "", partition = "ALL"] = id.split("/");
  const fit = (s: string) =>
    s.length <= FITS ? s : `${s.slice(0, Math.ceil((FITS - 1) / 2))}…${s.slice(-Math.floor((FITS - 1) / 2))}`;
  return [fit(`${project}/${account}`), fit(partition === "ALL" ? name : `${name}/${partition}`)];
}

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
    <div class="graph-box">
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
                <text x="8" y="13" class="sub">
                  {nodeLabel(n.id)[0]}
                </text>
                <text x="8" y="27">
                  {nodeLabel(n.id)[1]}
                </text>
                <text x="8" y="41" class="sub">
                  {n.missing ? "missing parent" : state}
                </text>
              </g>
            );
          })}
        </svg>
      </div>
      {/* Beside the graph, never over it: a node's neighbours stay in sight. */}
      {hover && hovered ? (
        <div class="tooltip" data-testid="tooltip" role="status">
          <strong>{hover}</strong>
          <div>{hovered.condition}</div>
          <ul>
            {(hovered.reasons ?? []).map((r) => (
              <li>{r}</li>
            ))}
          </ul>
        </div>
      ) : (
        <div class="tooltip empty">Point at a task to see where it stands and why; click it to open it.</div>
      )}
    </div>
  );
}
