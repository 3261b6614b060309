import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The web UI: TypeScript with Preact's JSX, built into dist/ for the API server. Vite only
// strips the types: `tsc -b` (services/web/tsconfig.json) checks them.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", reportCompressedSize: false },
});
