// The web UI's types of the API's answers: openapi-typescript over the API's OpenAPI document,
// built in-process (no server, no network) by the same app the server runs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiState, createApiApp } from "@chronolog/api";
import { openSqliteLog } from "@chronolog/log-sqlite";
import openapiTS, { astToString } from "openapi-typescript";

/** Where the generated types are kept (committed: the UI's type check reads them). */
export const GENERATED = new URL("../src/generated/api.d.ts", import.meta.url);

const HEADER = `// Generated from the API's OpenAPI document: do not edit. Regenerate with
//   npm run gen:api-types
// (a test fails while this file differs from what that command writes).
`;

/** The OpenAPI document as `GET /api/v1/openapi.json` answers it, from an app on an empty log. */
export async function openApiDocument() {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-openapi-"));
  const log = openSqliteLog({ path: join(dir, "log.db") });
  const state = await ApiState.open(log, dir);
  try {
    const app = createApiApp({ state, writeLog: null, dataDir: dir, webRoot: null });
    const res = await app.request("/api/v1/openapi.json");
    if (!res.ok) throw new Error(`the OpenAPI document: ${res.status} ${await res.text()}`);
    return await res.json();
  } finally {
    await state.close();
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The text of `src/generated/api.d.ts` for the API as it is now. */
export async function apiTypes() {
  const ast = await openapiTS(await openApiDocument());
  return HEADER + astToString(ast);
}
