import { describe, expect, it } from "vitest";
import { type QueueLoad, queueWaitReason } from "../src/index.js";

interface Row {
  name: string;
  given: { queue: string; load: QueueLoad };
  says: string;
}

const rows: Row[] = [
  {
    name: "no worker serves the queue",
    given: { queue: "gpu", load: { connected: 0, busy: 0, slots: 0 } },
    says: "waiting for a worker on queue gpu (0 connected)",
  },
  {
    name: "every slot of the connected workers is taken",
    given: { queue: "gpu", load: { connected: 2, busy: 16, slots: 16 } },
    says: "waiting for a worker on queue gpu (2 connected, 16 of 16 slots busy)",
  },
  {
    name: "a free slot (the attempt is on its way, or another limit holds it)",
    given: { queue: "dbt.prod", load: { connected: 1, busy: 0, slots: 4 } },
    says: "waiting for a worker on queue dbt.prod (1 connected, 0 of 4 slots busy)",
  },
  {
    name: "one worker with one slot: the noun in the singular",
    given: { queue: "spark", load: { connected: 1, busy: 1, slots: 1 } },
    says: "waiting for a worker on queue spark (1 connected, 1 of 1 slot busy)",
  },
  {
    name: "busy counts past the slots (a worker left with attempts still counted) are shown as they are",
    given: { queue: "gpu", load: { connected: 1, busy: 5, slots: 4 } },
    says: "waiting for a worker on queue gpu (1 connected, 5 of 4 slots busy)",
  },
];

describe("queueWaitReason: why a due task with a queue waits", () => {
  for (const row of rows) {
    it(`given ${row.name}, when asked, then it says so`, () => {
      expect(queueWaitReason(row.given.queue, row.given.load)).toBe(row.says);
    });
  }
});
