import { describe, expect, it } from "vitest";
import { H, layout, W } from "../src/graph-layout.js";

describe("the web UI's graph layout", () => {
  it("places every node, parents left of their children, and draws every edge", () => {
    const nodes = ["a", "b", "c", "lone"].map((id) => ({ id }));
    const edges = [
      { from: "a", to: "b" },
      { from: "b", to: "c" },
    ];
    const l = layout(nodes, edges);
    expect([...l.placed.keys()].sort()).toEqual(["a", "b", "c", "lone"]);
    const x = (id: string) => l.placed.get(id)?.x as number;
    expect(x("a")).toBeLessThan(x("b"));
    expect(x("b")).toBeLessThan(x("c"));
    expect(l.lines).toHaveLength(2);
    expect(l.edgePath.match(/M/g)).toHaveLength(2);
    expect(l.arrowPath.match(/Z/g)).toHaveLength(2);
    for (const p of l.placed.values()) {
      expect(p.x + W / 2).toBeLessThanOrEqual(l.width);
      expect(p.y + H / 2).toBeLessThanOrEqual(l.height);
    }
  });

  it("an edge to a node not shown is left out", () => {
    const l = layout([{ id: "a" }], [{ from: "gone", to: "a" }]);
    expect(l.placed.size).toBe(1);
    expect(l.lines).toHaveLength(0);
  });
});
