/**
 * Pinning the network's genesis hash in Settings, in a real Chromium against a real
 * `runnel dev`: the explorer follows the membership from the pin through the node, and a
 * seal's and an inclusion proof's ✓ come from it (how many orderers signed, against the
 * quorum). A wrong hash shows no ✓ anywhere, and says which rule failed.
 */

import { spawnSync } from "node:child_process";
import { RUNNEL_BIN } from "../../sdk-ts/test/node.js";
import { CHANNEL, expect, initNetwork, sealedBlock, test, uniqueKey } from "./fixtures.js";

/** `runnel config genesis-hash` of the network in `dir`, as an operator reads it. */
function genesisHash(dir: string): string {
  const result = spawnSync(RUNNEL_BIN, ["config", "genesis-hash", dir], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`runnel config genesis-hash failed: ${result.stderr}`);
  return result.stdout.trim();
}

test("a pinned genesis hash: the membership is shown, and seals and proofs get their ✓ from it", async ({ page, node, client }) => {
  const kv = client.getNetwork(CHANNEL).getContract("kv");
  const submitted = await kv.submitAsync("put", { arguments: [uniqueKey("pinned"), "checked"] });
  await submitted.getStatus();
  const block = await sealedBlock(client, submitted.getTransactionId());

  // Nothing pinned, nothing given: no ✓, and the way to pin.
  await page.goto(`/blocks/${block}`);
  const seal = page.getByTestId("seal-check");
  await expect(seal).toHaveAttribute("data-state", "unverified");
  await expect(seal).toContainText("No genesis hash is pinned");
  await expect(seal).not.toContainText("✓");

  await page.goto("/settings");
  await expect(page.getByTestId("membership")).toHaveAttribute("data-state", "none");
  await page.getByLabel("Genesis hash (64 hex digits)").fill("not a hash");
  await page.getByRole("button", { name: "Pin", exact: true }).click();
  await expect(page.getByTestId("genesis-message")).toContainText("Not pinned: a genesis hash is 64 hex digits");
  await page.getByLabel("Genesis hash (64 hex digits)").fill(genesisHash(node.networkDir));
  await page.getByRole("button", { name: "Pin", exact: true }).click();
  const membership = page.getByTestId("membership");
  await expect(membership).toHaveAttribute("data-state", "verified");
  await expect(membership).toContainText("✓ Pinned");
  await expect(membership).toContainText("0 configuration updates checked");

  await page.goto(`/blocks/${block}`);
  await expect(seal).toHaveAttribute("data-state", "verified");
  await expect(seal).toHaveAttribute("data-trust", "pinned");
  await expect(seal).toContainText("✓ Seal verified");
  await expect(seal.getByTestId("signed-by")).toContainText("quorum 1");
  await expect(seal).toContainText("network definition #0, followed from the pinned genesis hash");
  await expect(seal).not.toContainText("Membership not checked");
  const row = page.getByRole("table", { name: "Transactions" }).getByRole("row").filter({ has: page.locator(`a[href="/transactions/${submitted.getTransactionId()}"]`) });
  await row.getByRole("button", { name: /Verify the inclusion/ }).click();
  const proof = page.getByTestId("inclusion-check");
  await expect(proof).toHaveAttribute("data-state", "verified");
  await expect(proof).toHaveAttribute("data-trust", "pinned");
  await expect(proof).toContainText("✓ Inclusion verified");
});

test("a wrong genesis hash: no ✓, and the rule that failed", async ({ page, node, client }) => {
  const kv = client.getNetwork(CHANNEL).getContract("kv");
  const submitted = await kv.submitAsync("put", { arguments: [uniqueKey("wrong-pin"), "checked"] });
  await submitted.getStatus();
  const block = await sealedBlock(client, submitted.getTransactionId());
  // Another network's genesis: the same organisation's name, its own CA.
  const wrong = genesisHash(initNetwork(["Org1"]));
  expect(wrong).not.toBe(genesisHash(node.networkDir));
  await page.goto("/settings");
  await page.getByLabel("Genesis hash (64 hex digits)").fill(wrong);
  await page.getByRole("button", { name: "Pin", exact: true }).click();
  const membership = page.getByTestId("membership");
  await expect(membership).toHaveAttribute("data-state", "failed");
  await expect(membership).toHaveAttribute("data-rule", "GENESIS_HASH_MISMATCH");
  await expect(membership).not.toContainText("✓");

  await page.goto(`/blocks/${block}`);
  const seal = page.getByTestId("seal-check");
  await expect(seal).toHaveAttribute("data-state", "failed");
  await expect(seal).toContainText("✕ Seal check failed");
  await expect(seal.getByTestId("check-reason")).toContainText("GENESIS_HASH_MISMATCH");
  await expect(seal).not.toContainText("✓");
  const row = page.getByRole("table", { name: "Transactions" }).getByRole("row").filter({ has: page.locator(`a[href="/transactions/${submitted.getTransactionId()}"]`) });
  await row.getByRole("button", { name: /Verify the inclusion/ }).click();
  const proof = page.getByTestId("inclusion-check");
  await expect(proof).toHaveAttribute("data-state", "failed");
  await expect(proof.getByTestId("check-reason")).toContainText("GENESIS_HASH_MISMATCH");

  // Unpinned: back to not verified.
  await page.goto("/settings");
  await page.getByRole("button", { name: "Unpin" }).click();
  await expect(page.getByTestId("membership")).toHaveAttribute("data-state", "none");
});
