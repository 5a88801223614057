/**
 * Accessibility: every page, in light and dark, checked by axe-core (WCAG 2.1 A and AA)
 * in the real browser. A serious or critical violation fails the test.
 */

import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";
import { CHANNEL, expect, giveNetworkCa, test, uniqueKey } from "./fixtures.js";

async function violations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(" ")).slice(0, 3).join("; ")})`);
}

test("every page passes axe-core's WCAG A and AA rules, light and dark", async ({ page, node, client }) => {
  // Twenty-six full axe-core analyses: more than the default minute on a loaded machine.
  test.setTimeout(180_000);
  const kv = client.getNetwork(CHANNEL).getContract("kv");
  const key = uniqueKey("a11y");
  const submitted = await kv.submitAsync("put", { arguments: [key, "accessible"] });
  const status = await submitted.getStatus();
  await expect.poll(async () => (await client.getQuery().getTransaction(submitted.getTransactionId())).block).toBeGreaterThan(0n);
  const block = (await client.getQuery().getTransaction(submitted.getTransactionId())).block;
  const pages: [string, string][] = [
    ["/", "Dashboard"],
    ["/blocks", "Blocks"],
    [`/blocks/${block}`, `Block #${block}`],
    ["/transactions", "Transactions"],
    [`/transactions/${submitted.getTransactionId()}`, "Transaction"],
    ["/contracts", "Contracts"],
    ["/contracts/kv", "Contract"],
    [`/keys/kv/${key}`, "Key"],
    ["/network", "Network"],
    ["/search?q=nothing-here", "Search"],
    ["/settings", "Settings"],
  ];
  const found: string[] = [];
  const check = async (pages: [string, string][], label: string) => {
    for (const theme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: theme });
      for (const [path, heading] of pages) {
        await page.goto(path);
        await expect(page.getByRole("heading", { level: 1 })).toContainText(heading);
        await expect(page.locator("[data-connection=live]")).toBeAttached();
        await expect(page.locator("[aria-busy=true]")).toHaveCount(0);
        await expect(page.locator("html")).toHaveAttribute("data-theme", theme);
        for (const violation of await violations(page)) found.push(`${theme} ${path} (${label}): ${violation}`);
      }
    }
  };
  // Without a network CA (checks "not verified"), then with the node's (checks ✓, the CA listed).
  await check(pages, "no network CA");
  await giveNetworkCa(page, node.caPem);
  await check(
    [
      [`/blocks/${block}`, `Block #${block}`],
      ["/settings", "Settings"],
    ],
    "the network's CA",
  );
  expect(found, found.join("\n")).toEqual([]);
  expect(status.successful).toBe(true);
});
