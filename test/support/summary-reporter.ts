import type { Reporter, TestModule } from "vitest/node";

/**
 * Prints the ten slowest test files (where the suite's time goes), then one plain closing line,
 * `tests: N passed, N failed, N skipped`, after the run.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      if (module.state() === "failed" && [...module.children.allTests()].length === 0) failed += 1;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed += 1;
        else if (state === "failed") failed += 1;
        else skipped += 1;
      }
    }
    const slowest = testModules
      .map((m) => ({ file: m.moduleId.replace(`${process.cwd()}/`, ""), ms: m.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10);
    if (slowest.length > 1) {
      process.stdout.write("\nslowest test files:\n");
      for (const s of slowest)
        process.stdout.write(`  ${(s.ms / 1000).toFixed(1).padStart(7)} s  ${s.file}\n`);
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
