/**
 * Hostile ledger text against a real node in Chromium: a key and value written with a
 * right-to-left override and other invisible characters show them as markers, never as
 * themselves, on the live list, the transaction's page and the key's page, and the key's
 * link leads to its real bytes; an address that does not percent-decode shows "Bad
 * address" instead of breaking the page.
 */

import AxeBuilder from "@axe-core/playwright";
import type { Locator, Page } from "@playwright/test";
import { CHANNEL, expect, test, uniqueKey } from "./fixtures.js";

/** Characters that must never reach the page's text as themselves. */
const ACTING = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u;

/** What the element shows, as the user reads it, and all its text, hidden or not. */
async function shownText(locator: Locator): Promise<{ inner: string; all: string }> {
  return locator.evaluate((el) => ({ inner: (el as HTMLElement).innerText, all: el.textContent ?? "" }));
}

async function expectNoActingCharacters(locator: Locator): Promise<void> {
  const { inner, all } = await shownText(locator);
  expect(inner).not.toMatch(ACTING);
  expect(all).not.toMatch(ACTING);
}

/** Uncaught errors in the page: none is expected. */
function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  return errors;
}

test("a key with a right-to-left override shows it marked on the list, the transaction and the key's page", async ({ page, client, snap }) => {
  const errors = pageErrors(page);
  const kv = client.getNetwork(CHANNEL).getContract("kv");
  const prefix = uniqueKey("bidi");
  // Read as the browser would apply it, this key shows as `...-trvalue`.
  const key = `${prefix}-tr\u202Eeulav`;
  const value = "\u2066hidden\u2069 value\u200B";
  await page.goto("/transactions");
  await expect(page.locator("[data-connection=live]")).toBeAttached();
  const submitted = await kv.submitAsync("put", { arguments: [key, value] });
  await submitted.getStatus();
  const id = submitted.getTransactionId();

  // The live list: the call's arguments, marked, in the cell and in its title.
  const row = page.getByRole("row").filter({ has: page.locator(`a[data-tx="${id}"]`) });
  await expect(row).toBeVisible();
  await expect(row).toContainText(`${prefix}-tr⟨U+202E⟩eulav`);
  await expect(row.locator(".hidden-char").first()).toHaveText("⟨U+202E⟩");
  await expect(row.locator(".hidden-char").first()).toHaveAttribute("title", /RIGHT-TO-LEFT OVERRIDE/);
  await expect(row.locator(".hidden-char").first()).toBeVisible();
  expect(await row.locator(".c-call").getAttribute("title")).not.toMatch(ACTING);
  await expectNoActingCharacters(row);
  await snap("transactions-marked", ["light"]);

  // The transaction's page: the proposal's arguments and the read/write set.
  await row.locator(`a[data-tx="${id}"]`).click();
  await expect(page).toHaveURL(`/transactions/${id}`);
  const proposal = page.getByTestId("proposal");
  await expect(proposal).toContainText(`${prefix}-tr⟨U+202E⟩eulav`);
  await expect(proposal).toContainText("⟨U+2066⟩hidden⟨U+2069⟩ value⟨U+200B⟩");
  const writes = page.getByRole("table", { name: "Reads and writes in kv" });
  const keyLink = writes.getByRole("link", { name: `${prefix}-tr⟨U+202E⟩eulav` });
  await expect(keyLink).toBeVisible();
  await expect(keyLink.locator(".hidden-char")).toHaveText("⟨U+202E⟩");
  // The link carries the key's real bytes, percent-encoded.
  await expect(keyLink).toHaveAttribute("href", `/keys/kv/${encodeURIComponent(key)}`);
  await expectNoActingCharacters(page.locator("main"));

  // The key's page, reached by that link: its name and value marked, and it is the real key.
  await keyLink.click();
  await expect(page).toHaveURL(`/keys/kv/${encodeURIComponent(key)}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Key ${prefix}-tr⟨U+202E⟩eulav`);
  await expect(page.getByTestId("key-value")).toHaveText("⟨U+2066⟩hidden⟨U+2069⟩ value⟨U+200B⟩");
  await expect(page.getByRole("table", { name: "Key history" }).locator("tbody tr")).toHaveCount(1);
  await expectNoActingCharacters(page.locator("main"));
  await snap("key-marked");
  // The markers are legible: axe-core's contrast rules (WCAG AA) hold in both themes.
  for (const theme of ["light", "dark"] as const) {
    if ((await page.locator("html").getAttribute("data-theme")) !== theme) await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
    await expect(page.locator("html")).toHaveAttribute("data-theme", theme);
    const results = await new AxeBuilder({ page }).include(".hidden-char").withTags(["wcag2aa"]).analyze();
    expect(results.violations.map((violation) => `${theme}: ${violation.id}`)).toEqual([]);
  }
  expect(errors).toEqual([]);
});

test("an address that does not percent-decode shows Bad address, and the app goes on", async ({ page }) => {
  const errors = pageErrors(page);
  for (const path of ["/transactions/%zz%", "/keys/kv/%E0%A4%A", "/contracts/%"]) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Bad address");
    await expect(page.getByTestId("bad-address")).toContainText("malformed percent-encoding");
    await expect(page).toHaveTitle("Bad address · Runnel explorer");
  }
  // The frame still works: the navigation leads on, without a reload.
  await page.getByRole("link", { name: "Dashboard", exact: true }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Dashboard");
  // A path of no page is not found, as before.
  await page.goto("/no-such-page/%zz");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Not found");
  expect(errors).toEqual([]);
});
