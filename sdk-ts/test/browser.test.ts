/**
 * The browser bundle: src/browser.ts bundled for the browser platform (no Node.js
 * built-in may creep in), then run against the node over gRPC-web through `fetch` and
 * WebCrypto, as a page would. The explorer's end-to-end tests cover a real browser.
 */

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { beforeAll, describe, expect, inject, test } from "vitest";
import { CHANNEL, uniqueKey } from "./helpers.js";
import { RUNNEL_BIN } from "./node.js";

type Browser = typeof import("../src/browser.js");

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
let sdk: Browser;
let bundleText: string;

beforeAll(async () => {
  const outfile = join(mkdtempSync(join(tmpdir(), "runnel-bundle-")), "sdk.mjs");
  await build({
    entryPoints: [join(root, "src", "browser.ts")],
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    outfile,
    logLevel: "silent",
  });
  bundleText = readFileSync(outfile, "utf8");
  sdk = (await import(pathToFileURL(outfile).href)) as Browser;
});

describe("browser bundle", () => {
  test("holds no Node.js module", () => {
    expect(bundleText).not.toMatch(/from\s*["']node:/);
    expect(bundleText).not.toMatch(/require\(["'](node:)?(fs|http2?|crypto|net)["']\)/);
  });

  test("submits, evaluates and follows events over gRPC-web with keys given as PEM text", async () => {
    const dir = join(inject("runnelDir"), "identities", "Org1");
    const gateway = sdk.connect({
      url: inject("runnelUrl"),
      identity: sdk.identityFromPem(readFileSync(join(dir, "admin.pem"), "utf8"), "Org1"),
      signer: sdk.newPrivateKeySigner(readFileSync(join(dir, "admin.key"), "utf8")),
    });
    const network = gateway.getNetwork(CHANNEL);
    const key = uniqueKey("browser");
    await network.getContract("kv").submitTransaction("put", key, "from a page");
    expect(new TextDecoder().decode(await network.getContract("kv").evaluateTransaction("get", key))).toBe(
      '"from a page"',
    );
    const events = await network.getContractEvents("token");
    const minted = await network.getContract("token").submitAsync("mint", { arguments: ["Org1/page", "1"] });
    const iterator = events[Symbol.asyncIterator]();
    const next = await iterator.next();
    expect(next.value?.transactionId).toBe(minted.getTransactionId());
    events.close();
    await expect(network.getContract("token").submitTransaction("transfer", "Org1/x", "1")).rejects.toBeInstanceOf(
      sdk.EndorseError,
    );
    gateway.close();
  });

  test("follows the membership from a pinned genesis hash over gRPC-web, and checks a seal by it", async () => {
    const pinned = spawnSync(RUNNEL_BIN, ["config", "genesis-hash", inject("runnelDir")], { encoding: "utf8" }).stdout.trim();
    const gateway = sdk.connectReadOnly({ url: inject("runnelUrl") });
    const query = gateway.getQuery();
    const membership = await sdk.TrustedMembership.fetch(query, pinned);
    expect(membership.genesisHash).toBe(pinned);
    await expect.poll(async () => (await query.getNetworkInfo()).blockHeight).toBeGreaterThan(0n);
    const block = await query.getBlock(1n);
    expect(await sdk.verifySeal(block, { membership })).toMatchObject({ valid: true, quorum: 1, definitionSequence: 0n });
    await expect(sdk.TrustedMembership.fetch(query, "ab".repeat(32))).rejects.toMatchObject({ code: "GENESIS_HASH_MISMATCH" });
    gateway.close();
  });

  test("the node answers a page's CORS preflight for gRPC-web", async () => {
    const response = await fetch(`${inject("runnelUrl")}/runnel.v1.Gateway/Endorse`, {
      method: "OPTIONS",
      headers: {
        Origin: "http://example.test",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-grpc-web,x-user-agent",
      },
    });
    expect(response.ok).toBe(true);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
  });
});
