/**
 * Vite builds the explorer to dist/ (what `runnel dev --explorer explorer/dist` serves)
 * and serves it in development. The dev server forwards the node's API (gRPC-web) and
 * its /healthz and /metrics to RUNNEL_URL (default the dev node, http://127.0.0.1:7051),
 * so the page talks to its own origin either way.
 */

import { defineConfig } from "vite";

const node = process.env.RUNNEL_URL ?? "http://127.0.0.1:7051";

export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: true, chunkSizeWarningLimit: 400 },
  server: {
    host: "127.0.0.1",
    proxy: {
      "/runnel.v1.": { target: node, changeOrigin: true },
      "/healthz": { target: node, changeOrigin: true },
      "/metrics": { target: node, changeOrigin: true },
    },
  },
  preview: { host: "127.0.0.1" },
});
