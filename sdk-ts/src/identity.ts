/**
 * Identities: who a client is to the network. A Runnel identity is an X.509 certificate
 * with an Ed25519 key, issued by an organisation's CA (`runnel init` writes them as PEM
 * under `identities/<org>/<role>.pem`); the node reads the organisation and role from the
 * certificate itself.
 */

import { pemBlock } from "./pem.js";
import { ED25519, parseCertificate, type Certificate } from "./x509.js";

/** A client identity: the certificate the node sees as a proposal's creator. */
export interface Identity {
  /** The organisation, for display (the node reads it from the certificate). */
  readonly org?: string;
  /** The X.509 certificate, DER. */
  readonly credentials: Uint8Array;
}

/**
 * An identity from a PEM certificate (`-----BEGIN CERTIFICATE-----`), as text.
 *
 * @param pem - the certificate, PEM.
 * @param org - the organisation's name, for display.
 */
export function identityFromPem(pem: string, org?: string): Identity {
  const credentials = pemBlock(pem, "CERTIFICATE");
  return org === undefined ? { credentials } : { org, credentials };
}

/**
 * An identity from a DER certificate.
 *
 * @param der - the certificate, DER.
 * @param org - the organisation's name, for display.
 */
export function identityFromDer(der: Uint8Array, org?: string): Identity {
  if (der.length === 0) throw new TypeError("an identity's certificate must not be empty");
  return org === undefined ? { credentials: der } : { org, credentials: der };
}

/**
 * The certificate of `identity`, checked as the node checks a creator's: X.509 with an
 * Ed25519 key. `identityFromPem` and `identityFromDer` only decode (they are synchronous,
 * and the X.509 library loads on first use); the file helpers of the Node.js entry call
 * this, so that a wrong file is a `TypeError` before any call.
 *
 * @throws TypeError if the certificate is malformed or its key is not Ed25519.
 */
export async function identityCertificate(identity: Identity): Promise<Certificate> {
  const certificate = await parseCertificate(identity.credentials);
  if (certificate.keyAlgorithm !== ED25519) {
    throw new TypeError(`an identity's key must be Ed25519, not ${certificate.keyAlgorithm} (${certificate.subject})`);
  }
  return certificate;
}
