import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The web UI: plain modules (preact with htm, no JSX), built into dist/ for the API server.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  logLevel: "warn",
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", reportCompressedSize: false },
});
