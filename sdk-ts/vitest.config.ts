import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // The example imports the package by name; the tests run it against the sources.
  resolve: { alias: { "@runnel/sdk": fileURLToPath(new URL("./src/index.ts", import.meta.url)) } },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    pool: "forks",
    // The files share one node and its client account (token balances, live streams):
    // one file at a time, so that no test sees another's transactions.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 200_000,
  },
});
