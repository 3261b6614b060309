import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { logContractSuite } from "@chronolog/log/contract";
import { openSqliteLog } from "@chronolog/log-sqlite";

// The commits made on the log's own connection, and by its writer thread: both must keep the
// contract, each in each layout.
for (const writerThread of [false, true])
  for (const layout of [2, 1] as const)
    logContractSuite(`sqlite${writerThread ? ", writer thread" : ""}, layout ${layout}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "chronolog-contract-"));
      const path = join(dir, "log.db");
      const log = openSqliteLog({ path, actor: "test:contract", writerThread, layout });
      const others: Array<{ close(): Promise<void> }> = [];
      return {
        log,
        async openAnother() {
          const another = openSqliteLog({ path, actor: "test:contract-2", writerThread });
          others.push(another);
          return another;
        },
        async close() {
          for (const o of others) await o.close();
          await log.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    });
