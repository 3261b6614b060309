import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { logContractSuite } from "@chronolog/log/contract";
import { openSqliteLog } from "@chronolog/log-sqlite";

// Both layouts of the file must keep the contract.
for (const layout of [2, 1] as const)
  logContractSuite(`sqlite, layout ${layout}`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "chronolog-contract-"));
    const path = join(dir, "log.db");
    const log = openSqliteLog({ path, actor: "test:contract", layout });
    const others: Array<{ close(): Promise<void> }> = [];
    return {
      log,
      async openAnother() {
        const another = openSqliteLog({ path, actor: "test:contract-2" });
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
