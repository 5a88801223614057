/**
 * The two primitives the SDK needs besides signing: SHA-256 and random bytes. Both come
 * from the platform: WebCrypto in browsers; in Node.js the entry point installs
 * `node:crypto`'s synchronous hash, measured ~4 µs per 1.5 KB against ~45 µs of CPU for
 * `crypto.subtle.digest` (whose every call is a job on libuv's thread pool).
 */

/** Computes SHA-256, synchronously or not. */
export type Sha256 = (data: Uint8Array) => Uint8Array | Promise<Uint8Array>;

const webSha256: Sha256 = async (data) =>
  new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>));

let current: Sha256 = webSha256;

/** Replaces the SHA-256 implementation (the Node.js entry point installs `node:crypto`'s). */
export function setSha256(implementation: Sha256): void {
  current = implementation;
}

/** SHA-256 of `data`. */
export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return current(data);
}

/** `length` cryptographically random bytes. */
export function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  globalThis.crypto.getRandomValues(out);
  return out;
}
