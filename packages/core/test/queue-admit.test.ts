import { describe, expect, it } from "vitest";
import {
  admitTask,
  describeHold,
  projectedSlots,
  queueHasRoom,
  queueWaitReason,
  type Slots,
} from "../src/index.js";
import { DAY, declaredTask, idOf, taskSpec } from "./support/events.js";
import { projectionOf } from "./support/specification.js";

const ready = { kind: "ready", retry: null, run: null } as const;

describe("queueWaitReason: a task held for a worker of its queue, in words", () => {
  it("no worker serving the queue is connected", () => {
    expect(queueWaitReason("gpu", { connected: 0, busy: 0, slots: 0 })).toBe(
      "waiting for a worker on queue gpu (0 connected)",
    );
  });

  it("every slot of the connected workers is busy", () => {
    expect(queueWaitReason("gpu", { connected: 2, busy: 16, slots: 16 })).toBe(
      "waiting for a worker on queue gpu (2 connected, 16 of 16 slots busy)",
    );
  });

  it("room: a connected worker with a free slot", () => {
    expect(queueHasRoom({ connected: 1, busy: 3, slots: 4 })).toBe(true);
    expect(queueHasRoom({ connected: 1, busy: 4, slots: 4 })).toBe(false);
    expect(queueHasRoom({ connected: 0, busy: 0, slots: 0 })).toBe(false);
  });
});

describe("admitTask with a queue", () => {
  const p = projectionOf([declaredTask("a", DAY, taskSpec("a", { queue: "gpu" }))].flat());
  const task = p.tasks.get(idOf("a")) as never;

  it("given no worker on the queue, when admitted, then held with the queue's room", () => {
    const slots: Slots = { ...projectedSlots(p), queueRoom: () => ({ connected: 0, busy: 0, slots: 0 }) };
    const d = admitTask(p, task, ready, slots);
    expect(d).toEqual({ kind: "held", hold: { on: "queue", queue: "gpu", connected: 0, busy: 0, slots: 0 } });
    if (d.kind === "held")
      expect(describeHold(d.hold, p, 0)).toBe("waiting for a worker on queue gpu (0 connected)");
  });

  it("given every slot busy, when admitted, then held; given one free, then ready", () => {
    let busy = 16;
    const slots: Slots = { ...projectedSlots(p), queueRoom: () => ({ connected: 2, busy, slots: 16 }) };
    expect(admitTask(p, task, ready, slots).kind).toBe("held");
    busy = 15;
    expect(admitTask(p, task, ready, slots)).toEqual(ready);
  });

  it("given the log's view of workers (none connected), when admitted, then held for one", () => {
    expect(admitTask(p, task, ready, projectedSlots(p))).toEqual({
      kind: "held",
      hold: { on: "queue", queue: "gpu", connected: 0, busy: 0, slots: 0 },
    });
  });
});
