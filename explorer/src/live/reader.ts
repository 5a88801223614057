/**
 * The identity the explorer reads as, for a node whose reads are for members of the
 * network only (`[api] read_access = "members"`). The user loads a certificate and its
 * private key on the Settings page; they are kept in this tab's session storage, so they
 * are gone when the tab closes, and are never sent anywhere: the explorer signs a short
 * read grant with the key and sends that with each read (docs/explorer.md). Without an
 * identity the explorer reads as no one, which is all a node with open reads needs.
 */

import {
  connect,
  connectReadOnly,
  ed25519Pkcs8,
  identityCertificate,
  identityFromPem,
  newPrivateKeySigner,
  type Certificate,
  type Gateway,
} from "@runnel/sdk";

const STORAGE_KEY = "runnel-explorer-reader";

/** Most PEM text taken for the certificate and for the key, in characters. */
export const READER_PEM_CHARS_MAX = 16 * 1024;

/** A certificate and its private key, PEM. */
export interface ReaderIdentity {
  readonly certificatePem: string;
  readonly keyPem: string;
}

/** The identity kept for this tab; undefined when none. */
export function savedReader(): ReaderIdentity | undefined {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY);
    if (text === null) return undefined;
    const parsed = JSON.parse(text) as Partial<ReaderIdentity>;
    if (typeof parsed.certificatePem !== "string" || typeof parsed.keyPem !== "string") return undefined;
    return { certificatePem: parsed.certificatePem, keyPem: parsed.keyPem };
  } catch {
    // Storage refused (a privacy mode) or damaged: no identity.
    return undefined;
  }
}

/**
 * Checks `reader` (an X.509 certificate with an Ed25519 key, and an Ed25519 private key)
 * and keeps it for this tab: its certificate.
 *
 * @throws TypeError or RangeError if either does not read.
 */
export async function saveReader(reader: ReaderIdentity): Promise<Certificate> {
  for (const [what, text] of [
    ["certificate", reader.certificatePem],
    ["key", reader.keyPem],
  ] as const) {
    if (text.length > READER_PEM_CHARS_MAX) throw new RangeError(`the ${what} is ${text.length} characters, more than ${READER_PEM_CHARS_MAX}`);
  }
  const certificate = await identityCertificate(identityFromPem(reader.certificatePem));
  ed25519Pkcs8(reader.keyPem);
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ certificatePem: reader.certificatePem.trim(), keyPem: reader.keyPem.trim() }));
  return certificate;
}

/** Forgets the identity kept for this tab. */
export function forgetReader(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing kept
  }
}

/** A gateway to `url` reading as `reader`, or as no one. */
export function readerGateway(url: string, reader: ReaderIdentity | undefined): Gateway {
  if (reader === undefined) return connectReadOnly({ url });
  return connect({ url, identity: identityFromPem(reader.certificatePem), signer: newPrivateKeySigner(reader.keyPem) });
}

/** The error names of a read the node refused for want of an identity it accepts. */
export const READ_DENIED = ["IDENTITY_REQUIRED", "BAD_READ_GRANT"] as const;
