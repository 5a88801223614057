/**
 * The explorer on a network of organisations apart (`runnel up`: orderer0.Org1, peer0.Org1,
 * peer0.Org2, each its own process, over TLS, reads for members only), opened on Org1's
 * peer with Org1's client identity loaded: the Network page lists both organisations with
 * their nodes and Org2's peer alive as Org1's peer checked it; a kv put, which the policy
 * AND('Org1.peer','Org2.peer') makes both organisations endorse, shows its endorsements
 * under each; the kv contract shows each organisation's approval of its definition.
 */

import { test, expect, type Locator, type Page } from "@playwright/test";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UpNetwork } from "./up.js";

const EXPLORER_DIST = resolve(dirname(fileURLToPath(import.meta.url)), "..", "dist");

// The peers' TLS certificates come from the network's own TLS CAs.
test.use({ ignoreHTTPSErrors: true });

let network: UpNetwork | undefined;

test.beforeAll(async () => {
  test.setTimeout(200_000);
  network = await UpNetwork.up(EXPLORER_DIST);
});

test.afterAll(async () => {
  test.setTimeout(90_000);
  await network?.down();
});

function up(): UpNetwork {
  if (network === undefined) throw new Error("the network is not up");
  return network;
}

/** Opens Org1's peer and loads Org1's client identity in Settings, as a user does; stays on Settings. */
async function openAsOrg1Client(page: Page): Promise<void> {
  await page.goto(`${up().peerUrl(1)}/settings`);
  await page.locator("#reader-certificate").setInputFiles(up().identityFile("Org1", "client.pem"));
  await page.locator("#reader-key").setInputFiles(up().identityFile("Org1", "client.key"));
  await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Use this identity" }).click()]);
  await expect(page.getByTestId("reader")).toContainText("client.Org1");
}

/** The cell of `row` under the column headed `column` of `table`. */
async function cellOf(table: Locator, row: Locator, column: string): Promise<Locator> {
  const headers = await table.getByRole("columnheader").allInnerTexts();
  const index = headers.findIndex((header) => header.trim() === column);
  expect(index, `a column "${column}" in ${headers.join(", ")}`).toBeGreaterThanOrEqual(0);
  return row.locator(":scope > th, :scope > td").nth(index);
}

/** The row group of `table` headed `heading`: its header row, then its rows. */
function rowGroup(table: Locator, heading: string | RegExp): Locator {
  return table.getByRole("rowgroup").filter({ has: table.page().getByRole("rowheader", { name: heading }) });
}

test("the Network page lists both organisations, their peers and the orderer, with Org2's peer alive", async ({ page }) => {
  await openAsOrg1Client(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Network" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Network" })).toBeVisible();
  await expect(page.getByTestId("identity-required")).toHaveCount(0);

  const definition = page.getByTestId("network-definition");
  await expect(definition).toContainText("Lifecycle policy");
  await expect(definition).toContainText("MAJORITY admin");
  await expect(definition).toContainText("Config policy");
  await expect(definition).toContainText("(the genesis definition)");

  await expect(page.getByRole("heading", { level: 3, name: /^Org1/ })).toContainText("this node's organisation");
  await expect(page.getByRole("heading", { level: 3, name: /^Org2/ })).toBeVisible();

  const org1 = page.getByRole("table", { name: "Nodes of Org1" });
  const peer0Org1 = org1.getByRole("row", { name: /peer0\.Org1/ });
  await expect(peer0Org1).toContainText("(this node)");
  await expect(await cellOf(org1, peer0Org1, "Role")).toHaveText("peer");
  await expect(await cellOf(org1, peer0Org1, "Endpoint")).toHaveText(up().peerUrl(1));
  await expect(await cellOf(org1, peer0Org1, "Health")).toContainText("alive");
  for (const column of ["Committed", "Validated", "Ordered"]) {
    await expect.poll(async () => Number((await (await cellOf(org1, peer0Org1, column)).innerText()).replace(/,/g, "")), column).toBeGreaterThan(0);
  }
  const orderer = org1.getByRole("row", { name: /orderer0\.Org1/ });
  await expect(await cellOf(org1, orderer, "Role")).toHaveText("orderer");
  await expect(await cellOf(org1, orderer, "Endpoint")).toHaveText(`https://127.0.0.1:${up().basePort}`);

  const org2 = page.getByRole("table", { name: "Nodes of Org2" });
  const peer0Org2 = org2.getByRole("row", { name: /peer0\.Org2/ });
  await expect(await cellOf(org2, peer0Org2, "Role")).toHaveText("peer");
  await expect(await cellOf(org2, peer0Org2, "Endpoint")).toHaveText(up().peerUrl(2));
  await expect(await cellOf(org2, peer0Org2, "Health")).toContainText("● alive");
  const committed = await cellOf(org2, peer0Org2, "Committed");
  await expect.poll(async () => Number((await committed.innerText()).replace(/,/g, ""))).toBeGreaterThan(0);
  await expect(page.getByText("0 revoked certificates")).toHaveCount(2);
});

test("a kv put shows its endorsements grouped under Org1 and Org2, one peer each", async ({ page }) => {
  const invoked = await up().invoke("kv", "put", [`network-${Date.now().toString(36)}`, "endorsed by both"]);
  expect(invoked.code).toBe("VALID");
  await openAsOrg1Client(page);
  await page.goto(`${up().peerUrl(1)}/transactions/${invoked.tx_id}`);
  await expect(page.getByTestId("tx-code")).toContainText("valid");
  const endorsements = page.getByRole("table", { name: "Endorsements" });
  await expect(endorsements.getByRole("rowheader")).toHaveText([/^Org1/, /^Org2/]);
  for (const org of ["Org1", "Org2"]) {
    const group = rowGroup(endorsements, new RegExp(`^${org}`));
    await expect(group.getByRole("rowheader")).toHaveText(`${org} 1 endorsement`);
    // The heading row, then one endorser.
    const rows = group.getByRole("row");
    await expect(rows).toHaveCount(2);
    const endorser = rows.nth(1);
    await expect(await cellOf(endorsements, endorser, "Organisation")).toHaveText(org);
    await expect(await cellOf(endorsements, endorser, "Role")).toHaveText("peer");
    await expect(await cellOf(endorsements, endorser, "Name")).toHaveText(`peer0.${org}`);
  }
});

test("the kv contract shows its approvals by Org1 and Org2 for sequence 1, both matching the definition in force", async ({ page }) => {
  await openAsOrg1Client(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Contracts" }).click();
  await page.getByRole("table", { name: "Deployed contracts" }).getByRole("link", { name: "kv", exact: true }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("kv");
  await expect(page.getByTestId("definition-in-force")).toContainText("In force: sequence 1");
  const approvals = page.getByRole("table", { name: "Lifecycle approvals" });
  const sequence1 = rowGroup(approvals, /^Sequence 1/);
  await expect(sequence1.getByRole("rowheader")).toHaveText("Sequence 1 in force");
  for (const org of ["Org1", "Org2"]) {
    const row = sequence1.getByRole("row").filter({ has: page.getByRole("cell", { name: org, exact: true }) });
    await expect(await cellOf(approvals, row, "Standing")).toHaveText("✓ matches the definition in force");
  }
  await expect(sequence1.getByRole("row")).toHaveCount(3);
});
