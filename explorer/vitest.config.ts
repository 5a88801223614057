import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["browser"] },
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    environment: "happy-dom",
  },
});
