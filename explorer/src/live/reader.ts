/**
 * The identity the explorer reads as, for a node whose reads are for members of the
 * network only (`[api] read_access = "members"`). The user loads a certificate and its
 * private key on the Settings page. The explorer signs one read grant with the key (the
 * longest a node takes: 15 minutes) and drops the key at once: it is never stored, and
 * never sent. What this tab keeps, in its session storage, is the certificate and that
 * signed grant — a bearer credential for reads that cannot sign anything, least of all
 * a transaction (docs/security.md). The grant goes with each read; once it ends the
 * explorer says so and the identity is loaded again. Without one the explorer reads as
 * no one, which is all a node with open reads needs. The explorer's gateway is read-only:
 * it holds no signer.
 */

import {
  connectReadOnly,
  ed25519Pkcs8,
  identityCertificate,
  identityFromPem,
  isRead,
  newPrivateKeySigner,
  newReadGrant,
  READ_GRANT_DOMAIN,
  READ_GRANT_HEADER,
  READ_GRANT_LIFETIME_MS,
  type Certificate,
  type Gateway,
  type Signer,
} from "@runnel/sdk";

const STORAGE_KEY = "runnel-explorer-reader";

/** Most PEM text taken for the certificate and for the key, in characters. */
export const READER_PEM_CHARS_MAX = 16 * 1024;

/** Most characters of a stored grant read back (a node takes 8 KiB of base64). */
const GRANT_CHARS_MAX = 8 * 1024;

/** How long before its end a grant is treated as ended (clocks differ), in milliseconds. */
const GRANT_END_MARGIN_MS = 5_000;

/** What the user loads: a certificate and its private key, PEM. */
export interface ReaderIdentity {
  readonly certificatePem: string;
  readonly keyPem: string;
}

/** What the tab keeps: the certificate and a read grant it signed. No key. */
export interface SavedReader {
  readonly certificatePem: string;
  /** The encoded `SignedReadGrant`, base64, as the `runnel-read-grant-bin` header carries it. */
  readonly grant: string;
  /** When the grant ends, Unix milliseconds. */
  readonly notAfterMs: number;
}

/**
 * The reader kept for this tab; undefined when none. A stored entry that holds a private
 * key (what explorers before this one kept) is removed, never read.
 */
export function savedReader(): SavedReader | undefined {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY);
    if (text === null) return undefined;
    const parsed = JSON.parse(text) as Record<string, unknown>;
    if ("keyPem" in parsed) {
      sessionStorage.removeItem(STORAGE_KEY);
      return undefined;
    }
    const { certificatePem, grant, notAfterMs } = parsed;
    if (typeof certificatePem !== "string" || typeof grant !== "string" || typeof notAfterMs !== "number") return undefined;
    if (certificatePem.length > READER_PEM_CHARS_MAX || grant.length > GRANT_CHARS_MAX) return undefined;
    return { certificatePem, grant, notAfterMs };
  } catch {
    // Storage refused (a privacy mode) or damaged: no identity.
    return undefined;
  }
}

/** Whether `reader`'s grant has ended (or is about to). */
export function grantEnded(reader: SavedReader, nowMs: number = Date.now()): boolean {
  return nowMs >= reader.notAfterMs - GRANT_END_MARGIN_MS;
}

/**
 * `signer`, refusing to sign anything but a read grant's digest (`runnel.read.v1` ‖ a
 * SHA-256): the key is used for that one grant and nothing else.
 */
export function grantOnlySigner(signer: Signer): Signer {
  return async (message: Uint8Array) => {
    const domain = READ_GRANT_DOMAIN;
    const isGrant = message.length === domain.length + 32 && domain.every((byte, i) => message[i] === byte);
    if (!isGrant) throw new TypeError("the explorer signs read grants only");
    return signer(message);
  };
}

/**
 * Checks `reader` (an X.509 certificate with an Ed25519 key, and an Ed25519 private key),
 * signs a read grant of it for the channel the node at `url` serves, and keeps the
 * certificate and the grant for this tab — not the key. Its certificate.
 *
 * @throws TypeError or RangeError if either does not read; the node's error if it cannot
 * be asked its channel.
 */
export async function saveReader(reader: ReaderIdentity, url: string): Promise<Certificate> {
  for (const [what, text] of [
    ["certificate", reader.certificatePem],
    ["key", reader.keyPem],
  ] as const) {
    if (text.length > READER_PEM_CHARS_MAX) throw new RangeError(`the ${what} is ${text.length} characters, more than ${READER_PEM_CHARS_MAX}`);
  }
  const identity = identityFromPem(reader.certificatePem);
  const certificate = await identityCertificate(identity);
  ed25519Pkcs8(reader.keyPem);
  const signer = grantOnlySigner(newPrivateKeySigner(reader.keyPem));
  const gateway = connectReadOnly({ url });
  let channel: string;
  try {
    channel = (await gateway.getQuery().getNetworkInfo()).channel;
  } finally {
    gateway.close();
  }
  const notBeforeMs = Date.now() - 60_000;
  const grant = await newReadGrant({ identity, signer, channel, notBeforeMs });
  const saved: SavedReader = {
    certificatePem: reader.certificatePem.trim(),
    grant: base64(grant),
    notAfterMs: notBeforeMs + READ_GRANT_LIFETIME_MS,
  };
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(saved));
  return certificate;
}

/** Forgets the reader kept for this tab. */
export function forgetReader(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing kept
  }
}

/**
 * A read-only gateway to `url`, sending `reader`'s grant with every read and with
 * `GetNetworkInfo` (whose heights and peers a node under `ops_access = "members"` tells
 * members only), or reading as no one.
 */
export function readerGateway(url: string, reader: SavedReader | undefined): Gateway {
  if (reader === undefined) return connectReadOnly({ url });
  const grant = reader.grant;
  return connectReadOnly({
    url,
    interceptors: [
      (next) => async (request) => {
        if (isRead(request.method) || request.method.name === "GetNetworkInfo") {
          request.header.set(READ_GRANT_HEADER, grant);
        }
        return next(request);
      },
    ],
  });
}

/**
 * `fetch` carrying `reader`'s grant, for the node's operations routes (`/metrics`, which
 * a node under `ops_access = "members"` serves to members only); plain `fetch` without a
 * reader.
 */
export function readerFetch(reader: SavedReader | undefined): typeof fetch {
  if (reader === undefined) return (input, init) => fetch(input, init);
  const grant = reader.grant;
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set(READ_GRANT_HEADER, grant);
    return fetch(input, { ...init, headers });
  };
}

/** Standard base64 without padding, as gRPC binary headers carry bytes. */
function base64(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/=+$/, "");
}

/** The error names of a read the node refused for want of an identity it accepts. */
export const READ_DENIED = ["IDENTITY_REQUIRED", "BAD_READ_GRANT"] as const;
