import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The suite's slowest files, a minute or more each in a whole run, slowest first. Without
 * durations of an earlier run (a fresh clone), vitest runs larger files first, and the fault and
 * soak suites on other logs are files of two lines that import the embedded one's: they came
 * last, and the suite ended on them, one worker idle while the other ran a minute more. Run
 * first, they leave the short files to even out the end.
 */
export const SLOWEST = [
  "test/scale/cluster-kafka.test.ts",
  "test/scheduler/backfill-merge.test.ts",
  "test/scheduler/backfill.test.ts",
  "test/faults/soak-kafka.test.ts",
  "test/faults/faults-eventstore.test.ts",
  "test/faults/faults-kafka.test.ts",
  "test/python/python-worker.test.ts",
  "test/faults/soak-remote-kafka.test.ts",
  "test/faults/soak-remote.test.ts",
];

/** Vitest's order (durations of the last run, else sizes), with SLOWEST's files first. */
export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (f: TestSpecification) => {
      const i = SLOWEST.indexOf(relative(root, f.moduleId));
      return i < 0 ? SLOWEST.length : i;
    };
    // Array.prototype.sort is stable: the other files keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
