/**
 * What the end-to-end tests share: a real node per worker serving the explorer's build
 * (explorer/dist, as `runnel dev --explorer` serves it; the node harness is the SDK's tests'
 * own, sdk-ts/test/node.ts), a client of it through @runnel/sdk over gRPC (Node.js),
 * `snap`, which saves each page in light and dark, `giveNetworkCa`, which gives the
 * explorer a network CA through its Settings page, as a user does, and `sealedBlock`.
 */

import { test as base, expect, type Page } from "@playwright/test";
import { connect, loadNetworkIdentity, type Gateway } from "@runnel/sdk";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { RunnelNode } from "../../sdk-ts/test/node.js";

export { CHANNEL, initNetwork, networkCaPem, uniqueKey } from "../../sdk-ts/test/node.js";
export { expect };

type Theme = "light" | "dark";

const here = dirname(fileURLToPath(import.meta.url));
const EXPLORER_DIST = resolve(here, "..", "dist");
const SCREENS = resolve(here, "..", "test-results", "screens");
const DOCS_SCREENS = resolve(here, "..", "..", "docs", "explorer");

export const test = base.extend<{ snap: (name: string, themes?: readonly Theme[]) => Promise<void> }, { node: RunnelNode; client: Gateway }>({
  node: [
    async ({}, use) => {
      const node = await RunnelNode.start({ explorer: EXPLORER_DIST });
      await use(node);
      await node.stop();
    },
    { scope: "worker", timeout: 200_000 },
  ],
  client: [
    async ({ node }, use) => {
      const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org1", "client");
      const gateway = connect({ url: node.url, identity, signer });
      await use(gateway);
      gateway.close();
    },
    { scope: "worker" },
  ],
  baseURL: async ({ node }, use) => {
    await use(node.url);
  },
  snap: async ({ page }, use) => {
    await use((name, themes) => screenshot(page, name, themes));
  },
});

/**
 * Saves the page as test-results/screens/NAME-light.png and NAME-dark.png (and into
 * docs/explorer/ with DOCS_SCREENSHOTS=1), switching the theme with the page's own toggle.
 */
async function screenshot(page: Page, name: string, themes: readonly Theme[] = ["light", "dark"]): Promise<void> {
  mkdirSync(SCREENS, { recursive: true });
  for (const theme of themes) {
    const current = await page.evaluate(() => document.documentElement.dataset.theme);
    if (current !== theme) await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
    await expect(page.locator("html")).toHaveAttribute("data-theme", theme);
    const path = join(SCREENS, `${name}-${theme}.png`);
    await page.screenshot({ path, fullPage: false, animations: "disabled" });
    if (process.env.DOCS_SCREENSHOTS === "1") {
      mkdirSync(DOCS_SCREENS, { recursive: true });
      copyFileSync(path, join(DOCS_SCREENS, `${name}-${theme}.png`));
    }
  }
  if (themes.includes("dark")) await page.getByRole("button", { name: "Switch to light theme" }).click();
}


/** Pastes `pem` as the network's CA certificates on the Settings page and saves it; stays there. */
export async function giveNetworkCa(page: Page, pem: string): Promise<void> {
  await page.goto("/settings");
  await page.getByLabel("CA certificates (PEM)").fill(pem);
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByTestId("network-ca-message")).toContainText("Saved:");
}

/** The block that seals transaction `id`, once the node has sealed it. */
export async function sealedBlock(client: Gateway, id: string): Promise<bigint> {
  let block = 0n;
  await expect
    .poll(async () => {
      block = (await client.getQuery().getTransaction(id)).block;
      return block;
    })
    .toBeGreaterThan(0n);
  return block;
}
