/**
 * End-to-end tests in a real Chromium (Debian's, /usr/bin/chromium; Playwright never
 * downloads a browser). Each test file's worker starts a real `runnel dev` serving the
 * built explorer (e2e/fixtures.ts); build it first: `npm run -w explorer build`.
 */

import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results/artifacts",
  // One node per worker, and the tests of a file share it in order.
  workers: 1,
  fullyParallel: false,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [["list"]],
  use: {
    browserName: "chromium",
    viewport: { width: 1360, height: 900 },
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    },
  },
});
