/** An Ed25519 signer through `node:crypto`, synchronous underneath. */

import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import { ed25519Pkcs8 } from "../signing.js";
import type { Signer } from "../signing.js";

/**
 * A signer using `node:crypto` directly (Node.js only). WebCrypto's `subtle.sign` runs
 * each signature as a job on libuv's thread pool; this signs inline, measured here at
 * about half the CPU per signature (docs/benchmarks.md).
 *
 * @param key - PEM (PKCS#8), PKCS#8 DER, or the 32-byte seed.
 */
export function newNodeCryptoSigner(key: string | Uint8Array): Signer {
  const pkcs8 = ed25519Pkcs8(key);
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey({ key: Buffer.from(pkcs8), format: "der", type: "pkcs8" });
  } catch (error) {
    throw new TypeError(`not an Ed25519 private key (PKCS#8): ${String(error)}`);
  }
  if (keyObject.asymmetricKeyType !== "ed25519") {
    throw new TypeError(`not an Ed25519 private key: a ${keyObject.asymmetricKeyType ?? "unknown"} key`);
  }
  return async (message) => new Uint8Array(sign(null, message, keyObject));
}
