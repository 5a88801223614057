/**
 * A node whose reads are for members only (`read_access = "members"`): the explorer says
 * so and points to Settings; with an identity of the network loaded there it reads the
 * ledger live, and keeps a read grant, never the key, across reloads; with a key that is
 * not the certificate's, the node refuses its grant and the explorer says that instead.
 */

import { test, expect } from "@playwright/test";
import { connect, loadNetworkIdentity } from "@runnel/sdk";
import { readFileSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { RunnelNode, uniqueKey } from "../../sdk-ts/test/node.js";

const EXPLORER_DIST = resolve(dirname(fileURLToPath(import.meta.url)), "..", "dist");

let node: RunnelNode;

test.beforeAll(async () => {
  test.setTimeout(200_000);
  node = await RunnelNode.start({ explorer: EXPLORER_DIST });
  await node.reconfigure((toml) => toml.replace('read_access = "open"', 'read_access = "members"'));
});

test.afterAll(async () => {
  await node?.stop();
});

const identityFile = (org: string, file: string) => join(node.networkDir, "identities", org, file);

async function loadIdentity(page: import("@playwright/test").Page, cert: string, key: string): Promise<void> {
  await page.goto(`${node.url}/settings`);
  await page.locator("#reader-certificate").setInputFiles(cert);
  await page.locator("#reader-key").setInputFiles(key);
  await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Use this identity" }).click()]);
}

test("without an identity the explorer says the node serves members only", async ({ page }) => {
  await page.goto(node.url);
  const banner = page.getByTestId("identity-required");
  await expect(banner).toBeVisible();
  await expect(banner).toHaveAttribute("data-reason", "IDENTITY_REQUIRED");
  await banner.getByRole("link", { name: "Load an identity in Settings" }).click();
  await expect(page.getByTestId("reader")).toHaveAttribute("data-loaded", "no");
});

test("with a member's certificate and key the explorer reads the ledger live", async ({ page }) => {
  await loadIdentity(page, identityFile("Org1", "client.pem"), identityFile("Org1", "client.key"));
  await expect(page.getByTestId("reader")).toHaveAttribute("data-loaded", "yes");
  await expect(page.getByTestId("reader")).toContainText("client.Org1");

  // A transaction submitted now shows up in the live list.
  const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org1", "client");
  const client = connect({ url: node.url, identity, signer });
  try {
    const key = uniqueKey("members");
    const submitted = await client.getNetwork("main").getContract("kv").submitAsync("put", { arguments: [key, "1"] });
    await submitted.getStatus();
    await page.goto(`${node.url}/transactions`);
    await expect(page.locator("[data-connection=live]")).toBeAttached();
    await expect(page.getByTestId("identity-required")).toHaveCount(0);
    const row = page.getByRole("row").filter({ has: page.locator(`a[data-tx="${submitted.getTransactionId()}"]`) });
    await expect(row).toContainText(key);
    // The dashboard reads the node's heights and /metrics as the member too: a node whose
    // reads are for members tells only members those (ops_access follows read_access).
    await page.goto(node.url);
    await expect(page.getByTestId("node-metrics")).toBeVisible();
    await expect(page.getByTestId("stat-committed")).not.toContainText("—");
  } finally {
    client.close();
  }
});

test("with a key that is not the certificate's, the node refuses the grant and the explorer says so", async ({ page }) => {
  await loadIdentity(page, identityFile("Org1", "client.pem"), identityFile("Org1", "admin.key"));
  const banner = page.getByTestId("identity-required");
  await expect(banner).toHaveAttribute("data-reason", "BAD_READ_GRANT");
  await expect(banner).toContainText("refused the identity loaded here");
});

/** Everything the page's origin keeps: web storage, IndexedDB, caches, cookies. */
async function everythingStored(page: import("@playwright/test").Page): Promise<string> {
  const kept = await page.evaluate(async () => {
    const storage = (store: Storage) => Object.fromEntries(Array.from({ length: store.length }, (_, i) => store.key(i) ?? "").map((key) => [key, store.getItem(key)]));
    const databases = "databases" in indexedDB ? await indexedDB.databases() : [];
    return {
      session: storage(sessionStorage),
      local: storage(localStorage),
      databases: databases.map((database) => database.name),
      caches: "caches" in globalThis ? await caches.keys() : [],
    };
  });
  const cookies = await page.context().cookies();
  return JSON.stringify({ ...kept, cookies });
}

test("after loading an identity and reloading, the tab keeps a read grant and no signing key, and reads on", async ({ page }) => {
  const keyFile = identityFile("Org1", "client.key");
  await loadIdentity(page, identityFile("Org1", "client.pem"), keyFile);
  await page.reload();
  await expect(page.getByTestId("reader")).toHaveAttribute("data-loaded", "yes");

  // Nothing kept holds the key, in any encoding of it.
  const stored = await everythingStored(page);
  const keyPem = readFileSync(keyFile, "utf8");
  const keyBase64 = keyPem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  expect(stored).not.toContain("PRIVATE KEY");
  expect(stored).not.toContain(keyBase64);
  expect(stored).not.toContain(keyBase64.slice(-40));
  const kept = await page.evaluate(() => JSON.parse(sessionStorage.getItem("runnel-explorer-reader") ?? "{}") as Record<string, unknown>);
  expect(Object.keys(kept).sort()).toEqual(["certificatePem", "grant", "notAfterMs"]);
  await expect(page.getByTestId("reader-grant")).toHaveAttribute("data-ended", "no");

  // The grant alone still reads the ledger live.
  await page.goto(`${node.url}/transactions`);
  await expect(page.locator("[data-connection=live]")).toBeAttached();
  await expect(page.getByTestId("identity-required")).toHaveCount(0);
});
