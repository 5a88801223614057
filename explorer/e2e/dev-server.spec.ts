/**
 * The explorer from Vite's dev server (`npm run -w explorer dev`), as one works on it: the
 * server forwards the node's API, /healthz and /metrics (vite.config.ts), streams
 * included, so the page is live as when the node serves it.
 */

import { fileURLToPath } from "node:url";
import { createServer, type ViteDevServer } from "vite";
import { CHANNEL, expect, test, uniqueKey } from "./fixtures.js";

let server: ViteDevServer | undefined;

test.afterEach(async () => {
  await server?.close();
  server = undefined;
});

test("Vite's dev server serves the explorer against a node, live", async ({ page, node, client }) => {
  process.env.RUNNEL_URL = node.url;
  server = await createServer({
    configFile: fileURLToPath(new URL("../vite.config.ts", import.meta.url)),
    root: fileURLToPath(new URL("..", import.meta.url)),
    server: { port: 0, strictPort: false, hmr: false },
    logLevel: "warn",
  });
  await server.listen();
  const address = server.httpServer?.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  expect(port).toBeGreaterThan(0);

  await page.goto(`http://127.0.0.1:${port}/transactions`);
  await expect(page.locator("[data-connection=live]")).toBeAttached();
  const submitted = await client.getNetwork(CHANNEL).getContract("kv").submitAsync("put", { arguments: [uniqueKey("vite"), "dev server"] });
  await submitted.getStatus();
  await expect(page.locator(`a[data-tx="${submitted.getTransactionId()}"]`)).toBeVisible();
  await page.goto(`http://127.0.0.1:${port}/`);
  await expect(page.getByTestId("node-row").locator("[data-health]")).toHaveAttribute("data-health", "healthy");
});
