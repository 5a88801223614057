/**
 * A certificate judged against the network's organisation CAs, by the rules of the node's
 * MSP (node/api/src/identity/msp.rs and role.rs), so that a client trusts a seal's
 * orderer exactly when a peer would. A trusted CA is a self-signed Ed25519 certificate
 * naming its organisation (O). A certificate it vouches for has an Ed25519 key, names that
 * CA as its issuer (the name's DER, byte for byte), carries that CA's Ed25519 signature,
 * claims that CA's organisation, has one of Runnel's roles as its first OU, and is within
 * its validity period at the time asked about. As on the node, neither the CA's own
 * validity period nor key usage or basic constraints are checked.
 *
 * The CAs come from the caller (the network's configuration: `identities/<org>/ca.pem`),
 * never from the answer being checked: a node that made up its own CA would otherwise
 * vouch for itself.
 */

import { pemBlocks } from "./pem.js";
import { ED25519, parseCertificate, type Certificate } from "./x509.js";

/** The roles a Runnel identity can hold, carried as its certificate subject's OU. */
export const ROLES = ["client", "peer", "orderer", "admin"] as const;

/** One of {@link ROLES}. */
export type Role = (typeof ROLES)[number];

/** Most trusted CA certificates taken at once; a network has one per organisation. */
export const TRUSTED_CAS_MAX = 64;

/** A CA the caller trusts: an organisation's self-signed root. */
export interface TrustedCa {
  /** Its organisation: the O of its subject. */
  readonly org: string;
  /** Its certificate. */
  readonly certificate: Certificate;
}

/**
 * CA certificates as a caller gives them: PEM text (one or more `CERTIFICATE` blocks),
 * DER bytes, or CAs already read with {@link parseTrustedCas}.
 */
export type CaCertificates = readonly (string | Uint8Array | TrustedCa)[];

/** An identity the CAs vouch for. */
export interface VerifiedIdentity {
  /** The organisation (its CA's). */
  readonly org: string;
  /** The role: the first OU of its subject. */
  readonly role: Role;
  /** The subject's common name. */
  readonly name: string;
  /** Its certificate. */
  readonly certificate: Certificate;
}

/** The outcome of {@link verifyIdentity}: the identity, or why not. */
export type IdentityCheck =
  | { readonly valid: true; readonly identity: VerifiedIdentity }
  | { readonly valid: false; readonly reason: string };

/**
 * Reads the CA certificates to trust, as the node reads its MSP's: each must be a
 * self-signed certificate with an Ed25519 key whose subject names its organisation (O).
 *
 * @throws TypeError naming the certificate and what is wrong with it, or if there are more
 *   than {@link TRUSTED_CAS_MAX}.
 */
export async function parseTrustedCas(cas: CaCertificates): Promise<TrustedCa[]> {
  const trusted: TrustedCa[] = [];
  for (const [index, given] of cas.entries()) {
    if (typeof given === "object" && "certificate" in given) {
      trusted.push(given);
    } else {
      const ders = typeof given === "string" ? pemOrThrow(given, index) : [given];
      for (const der of ders) trusted.push(await trustedCa(der, `CA certificate ${trusted.length + 1}`));
    }
    if (trusted.length > TRUSTED_CAS_MAX) {
      throw new TypeError(`more than ${TRUSTED_CAS_MAX} trusted CA certificates`);
    }
  }
  return trusted;
}

function pemOrThrow(pem: string, index: number): Uint8Array[] {
  try {
    return pemBlocks(pem, "CERTIFICATE");
  } catch (error) {
    throw new TypeError(`trusted CA ${index + 1}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function trustedCa(der: Uint8Array, what: string): Promise<TrustedCa> {
  let certificate: Certificate;
  try {
    certificate = await parseCertificate(der);
  } catch (error) {
    throw new TypeError(`${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const named = `${what} (${certificate.subject})`;
  if (certificate.keyAlgorithm !== ED25519) {
    throw new TypeError(`${named}: its key is ${certificate.keyAlgorithm}, not Ed25519`);
  }
  if (certificate.signatureAlgorithm !== ED25519 || !(await certificate.isSelfSigned())) {
    throw new TypeError(`${named}: not a self-signed Ed25519 certificate, so not an organisation's CA`);
  }
  const org = certificate.organization;
  if (org === undefined || org === "") throw new TypeError(`${named}: no organisation (O) in its subject`);
  return { org, certificate };
}

/**
 * Judges certificate `der` as the node's MSP would at `atMs` (Unix milliseconds, checked
 * to the second as the node does) and requires `role`. Answers with the reason when it
 * fails; never throws on bad input.
 */
export async function verifyIdentity(
  der: Uint8Array,
  cas: readonly TrustedCa[],
  atMs: bigint,
  role: Role,
): Promise<IdentityCheck> {
  const fail = (reason: string): IdentityCheck => ({ valid: false, reason });
  let certificate: Certificate;
  try {
    certificate = await parseCertificate(der);
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
  if (certificate.keyAlgorithm !== ED25519) return fail(`its key is ${certificate.keyAlgorithm}, not Ed25519`);
  const named = cas.filter((ca) => ca.certificate.subject === certificate.issuer);
  if (named.length === 0) return fail(`its issuer, ${certificate.issuer}, is none of the trusted CAs`);
  const issuer = certificate.signatureAlgorithm === ED25519 ? await certificate.issuerAmong(named.map((ca) => ca.certificate)) : undefined;
  const ca = named.find((candidate) => candidate.certificate === issuer);
  if (ca === undefined) return fail(`it is not signed by the trusted CA ${certificate.issuer}`);
  const claimed = certificate.organization ?? "";
  if (claimed !== ca.org) return fail(`it claims organisation ${JSON.stringify(claimed)}, but its CA is ${ca.org}'s`);
  const ou = certificate.organizationalUnit;
  if (ou === undefined) return fail("it has no role (no OU in its subject)");
  const held = ROLES.find((known) => known === ou.toLowerCase());
  if (held === undefined) return fail(`its role ${JSON.stringify(ou)} is none of client, peer, orderer, admin`);
  if (held !== role) return fail(`its role is ${held}, not ${role}`);
  const at = atMs / 1000n;
  const notBefore = BigInt(Math.floor(certificate.notBefore.getTime() / 1000));
  const notAfter = BigInt(Math.floor(certificate.notAfter.getTime() / 1000));
  if (at < notBefore || at > notAfter) {
    const state = at < notBefore ? "not yet valid" : "expired";
    const when = (seconds: bigint) => new Date(Number(seconds) * 1000).toISOString();
    return fail(`it was ${state} at ${when(at)} (valid from ${when(notBefore)} to ${when(notAfter)})`);
  }
  const identity = { org: ca.org, role: held, name: certificate.commonName ?? "", certificate };
  return { valid: true, identity };
}
