/** Identities, signers and checkpointers from files (Node.js only). */

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { inMemoryCheckpointer } from "../checkpoint.js";
import { identityCertificate, identityFromDer, identityFromPem, type Identity } from "../identity.js";
import { parseTrustedCas, type TrustedCa } from "../msp.js";
import { newPrivateKeySigner, type Signer } from "../signing.js";
import { fileCheckpointer } from "./checkpoint.js";
import { newNodeCryptoSigner } from "./signer.js";

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new Error(`reading ${what} ${path}: ${String(error)}`, { cause: error });
  }
}

/** The identity in the PEM certificate `pem` read from `path`, its certificate checked. */
async function checkedIdentity(pem: string, path: string, org: string | undefined): Promise<Identity> {
  try {
    const identity = identityFromPem(pem, org);
    await identityCertificate(identity);
    return identity;
  } catch (error) {
    throw new TypeError(`${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Identities from certificates. */
export const identities = {
  /** An identity from a PEM certificate's text. */
  fromPem: identityFromPem,
  /** An identity from a DER certificate. */
  fromDer: identityFromDer,
  /** An identity from a PEM certificate file, e.g. `identities/Org1/client.pem`; its certificate is checked. */
  async fromPemFile(path: string, org?: string): Promise<Identity> {
    return checkedIdentity(await readText(path, "the certificate"), path, org);
  },
};

/** Signers from private keys. */
export const signers = {
  /** A WebCrypto Ed25519 signer (browsers and Node.js alike) from PEM (PKCS#8), PKCS#8 DER or a 32-byte seed. */
  newPrivateKeySigner,
  /** A `node:crypto` Ed25519 signer (Node.js; half WebCrypto's cost here) from the same. */
  newNodeCryptoSigner,
  /** A `node:crypto` Ed25519 signer from a PEM private key file, e.g. `identities/Org1/client.key`. */
  async fromPemFile(path: string): Promise<Signer> {
    return newNodeCryptoSigner(await readText(path, "the private key"));
  },
};

/** Checkpointers for event and block streams. */
export const checkpointers = {
  /** Kept in memory. */
  inMemory: inMemoryCheckpointer,
  /** Kept in a JSON file, replaced atomically. */
  file: fileCheckpointer,
};

/** The public network definition's file in every directory `runnel init` makes. */
export const NETWORK_FILE = "network.json";

/** A network definition as `runnel init` writes it (`network.json`). */
export interface NetworkFile {
  readonly channel: string;
  readonly orgs: readonly {
    readonly name: string;
    /** The org's CA certificate, PEM. */
    readonly ca: string;
    /** The org's TLS CA certificate, PEM: what a client trusts to reach its peers. */
    readonly tlsCa: string;
    readonly peers: readonly { readonly name: string; readonly endpoint: string }[];
  }[];
  readonly orderers: readonly { readonly name: string; readonly org: string; readonly endpoint: string }[];
  /** Every organisation's TLS CA, PEM, one after another: `connect`'s `tls.ca` for any peer. */
  readonly tlsCas: string;
}

/**
 * The network definition in `<dir>/network.json` (every directory `runnel init` makes
 * holds it): the organisations, their peers' endpoints and the TLS CAs to trust.
 */
export async function loadNetworkFile(dir: string): Promise<NetworkFile> {
  const path = join(dir, NETWORK_FILE);
  const text = await readText(path, "the network definition");
  let json: {
    channel: string;
    orgs: { name: string; ca: string; tls_ca: string; peers?: { name: string; endpoint: string }[] }[];
    orderers?: { name: string; org: string; endpoint: string }[];
  };
  try {
    json = JSON.parse(text) as typeof json;
  } catch (error) {
    throw new TypeError(`${path} is not JSON: ${String(error)}`, { cause: error });
  }
  const orgs = json.orgs.map((org) => ({ name: org.name, ca: org.ca, tlsCa: org.tls_ca, peers: org.peers ?? [] }));
  return { channel: json.channel, orgs, orderers: json.orderers ?? [], tlsCas: orgs.map((org) => org.tlsCa).join("") };
}

/** An identity and its signer. */
export interface NetworkIdentity {
  /** The certificate. */
  readonly identity: Identity;
  /** A signer with its private key. */
  readonly signer: Signer;
}

/**
 * The identity `role` of organisation `org` in a directory made by `runnel init` or
 * `runnel dev` (for a network of organisations apart, the organisation's own
 * `<network>/<org>`): `<dir>/identities/<org>/<role>.pem` and `.key`. The certificate is
 * checked (X.509, an Ed25519 key) and the key read before it returns.
 *
 * @param role - `"client"` (default), `"admin"`, or the name of an identity
 *   `runnel identity issue` made.
 */
export async function loadNetworkIdentity(dir: string, org: string, role = "client"): Promise<NetworkIdentity> {
  const base = join(dir, "identities", org, role);
  const [cert, key] = await Promise.all([
    readText(`${base}.pem`, "the certificate"),
    readText(`${base}.key`, "the private key"),
  ]);
  return { identity: await checkedIdentity(cert, `${base}.pem`, org), signer: newNodeCryptoSigner(key) };
}


/**
 * The organisation CAs of a network directory made by `runnel init` or `runnel dev`:
 * every `<dir>/identities/<org>/ca.pem`, read as `parseTrustedCas` reads them. What
 * `verifySeal` and `verifyInclusionProof` trust; read it from the network's own files,
 * not from a node.
 *
 * @throws TypeError if a CA certificate is not a self-signed Ed25519 certificate naming its organisation.
 */
export async function loadNetworkCas(dir: string): Promise<TrustedCa[]> {
  const definition = await loadNetworkFile(dir).catch(() => undefined);
  if (definition !== undefined) {
    const path = join(dir, NETWORK_FILE);
    try {
      return await parseTrustedCas(definition.orgs.map((org) => org.ca));
    } catch (error) {
      throw new TypeError(`${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  const root = join(dir, "identities");
  let orgs: string[];
  try {
    orgs = (await readdir(root, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch (error) {
    throw new Error(`reading the organisations in ${root}: ${String(error)}`, { cause: error });
  }
  const cas: TrustedCa[] = [];
  for (const org of orgs.sort()) {
    const path = join(root, org, "ca.pem");
    const pem = await readText(path, "the CA certificate");
    try {
      cas.push(...(await parseTrustedCas([pem])));
    } catch (error) {
      throw new TypeError(`${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  return cas;
}
