import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import SlowestFirst from "./test/support/sequencer.js";

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@chronolog\/core$/, replacement: src("./packages/core/src/index.ts") },
      { find: /^@chronolog\/log$/, replacement: src("./packages/log/src/index.ts") },
      { find: /^@chronolog\/log\/contract$/, replacement: src("./packages/log/src/contract/index.ts") },
      { find: /^@chronolog\/scheduler$/, replacement: src("./packages/scheduler/src/index.ts") },
      { find: /^@chronolog\/worker$/, replacement: src("./packages/worker/src/index.ts") },
      { find: /^@chronolog\/log-sqlite$/, replacement: src("./packages/log-sqlite/src/index.ts") },
      { find: /^@chronolog\/log-kafka$/, replacement: src("./packages/log-kafka/src/index.ts") },
      {
        find: /^@chronolog\/log-eventstore\/stand-in$/,
        replacement: src("./packages/log-eventstore/src/stand-in.ts"),
      },
      { find: /^@chronolog\/log-eventstore$/, replacement: src("./packages/log-eventstore/src/index.ts") },
      { find: /^@chronolog\/api$/, replacement: src("./services/api/src/index.ts") },
      { find: /^@chronolog\/api\/tokens$/, replacement: src("./services/api/src/tokens/index.ts") },
      { find: /^@chronolog\/render$/, replacement: src("./packages/render/src/index.ts") },
    ],
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    // Every `chronolog up` a test starts would serve the HTTP API on 127.0.0.1:8080, and tests
    // run side by side: only tests of the API turn it on, each on a port of its own.
    env: { CHRONOLOG_HTTP: "off" },
    // Two test files at a time (the default on two cores is one): most of the suite waits on
    // the processes it starts (the CLI, workers, brokers), not on its own thread.
    maxWorkers: 2,
    // The slowest files first, whatever their size (see the sequencer).
    sequence: { sequencer: SlowestFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default", "./test/support/summary-reporter.ts"],
    globalSetup: ["./test/support/global-setup.ts"],
  },
});
