import { describe, expect, it } from "vitest";
import { Agenda } from "../src/agenda.js";

/** An agenda whose tasks named `c…` share a limit; counts the passes asked for and the questions. */
function agenda(limited: Set<string> = new Set()) {
  let passes = 0;
  let asked = 0;
  const a = new Agenda(
    () => 0,
    () => {
      passes += 1;
    },
    (id) => {
      asked += 1;
      return limited.has(id) || id.startsWith("c");
    },
  );
  return { a, passes: () => passes, asked: () => asked };
}

describe("Agenda.take", () => {
  it("takes every marked task, in the order marked, when they are few", () => {
    const { a, passes } = agenda();
    for (const id of ["f1", "c1", "f2", "c2"]) a.wake(id);
    expect(passes()).toBe(4);
    expect(a.take(10)).toEqual(["f1", "c1", "f2", "c2"]);
    expect(a.dirtyCount).toBe(0);
    expect(a.take(10)).toEqual([]);
  });

  it("of a burst takes every task sharing a limit and a piece of the others, in order", () => {
    const { a } = agenda();
    a.markAll(["f1", "c1", "f2", "f3", "c2", "f4", "f5", "c3"]);
    expect(a.dirtyCount).toBe(8);
    expect(a.take(2)).toEqual(["f1", "f2", "c1", "c2", "c3"]);
    expect(a.dirtyCount).toBe(3);
    expect(a.take(2)).toEqual(["f3", "f4"]);
    expect(a.take(2)).toEqual(["f5"]);
    expect(a.dirtyCount).toBe(0);
  });

  it("asks whether a task shares a limit when it is marked, never when taking", () => {
    const { a, asked } = agenda();
    a.markAll(Array.from({ length: 10_000 }, (_, i) => `f${i}`));
    expect(asked()).toBe(10_000);
    let taken = 0;
    while (a.dirtyCount > 0) taken += a.take(1000).length;
    expect(taken).toBe(10_000);
    expect(asked()).toBe(10_000);
  });

  it("takes a task as it is when last marked: one that came to share a limit is taken with them", () => {
    const limited = new Set<string>();
    const { a } = agenda(limited);
    a.markAll(["f1", "f2", "f3", "f4"]);
    // f4's declaration changed: it has a connection now, and is marked again.
    limited.add("f4");
    a.wake("f4");
    expect(a.take(1)).toEqual(["f1", "f4"]);
    // and back: marked again without one, it waits for its turn among the others.
    limited.add("x9");
    a.markAll(["x9"]);
    limited.delete("x9");
    a.wake("x9");
    expect(a.take(1)).toEqual(["f2"]);
    expect(a.take(1)).toEqual(["f3"]);
    expect(a.take(1)).toEqual(["x9"]);
  });

  it("counts a task marked twice once", () => {
    const { a } = agenda();
    a.markAll(["f1", "c1", "f1", "c1"]);
    expect(a.dirtyCount).toBe(2);
    expect(a.take(1)).toEqual(["f1", "c1"]);
  });
});
