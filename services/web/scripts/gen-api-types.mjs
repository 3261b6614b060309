// Writes the web UI's types of the API (src/generated/api.d.ts) from the API's OpenAPI document.
// Run through `npm run gen:api-types`, which builds the API first: this imports its dist.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { apiTypes, GENERATED } from "./api-types.mjs";

writeFileSync(GENERATED, await apiTypes());
console.log(`wrote ${fileURLToPath(GENERATED)}`);
