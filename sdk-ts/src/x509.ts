/**
 * X.509 certificates, read with @peculiar/x509 (RFC 5280 on WebCrypto, so the same code
 * runs in Node.js and browsers). Runnel's identities, orderers and CAs are certificates
 * with Ed25519 keys (`runnel init` issues them). This module parses a certificate, gives
 * its names and Ed25519 key, and finds which of some given certificates issued it (the
 * library's chain builder): the pieces a chain to the network's CAs is built from. It
 * never decides whether a certificate is trusted; msp.ts does, as the node's MSP does.
 *
 * The library is loaded on first use: it is ~220 KB minified, more than the rest of the
 * browser bundle, and most pages never read a certificate.
 */

import type { X509Certificate } from "@peculiar/x509";

let library: Promise<typeof import("./x509-library.js")> | undefined;

function x509Library(): Promise<typeof import("./x509-library.js")> {
  library ??= import("./x509-library.js").catch((error: unknown) => {
    library = undefined;
    throw error;
  });
  return library;
}

/** Largest certificate accepted, in bytes; Runnel's are well under 1 KB. */
export const CERTIFICATE_BYTES_MAX = 16 * 1024;

/** The WebCrypto name of Runnel's key algorithm (RFC 8410, OID 1.3.101.112). */
export const ED25519 = "Ed25519";

/** A parsed X.509 certificate; {@link parseCertificate} makes one. */
export class Certificate {
  /** The certificate, DER, as given. */
  readonly der: Uint8Array;
  readonly #x509: X509Certificate;

  /** @internal Use {@link parseCertificate}. */
  constructor(der: Uint8Array, x509: X509Certificate) {
    this.der = der;
    this.#x509 = x509;
  }

  /** The subject's first organisation (O), as the node's MSP reads it; undefined if none. */
  get organization(): string | undefined {
    return this.#x509.subjectName.getField("O")[0];
  }

  /** The subject's first organisational unit (OU): a Runnel identity's role; undefined if none. */
  get organizationalUnit(): string | undefined {
    return this.#x509.subjectName.getField("OU")[0];
  }

  /** The subject's first common name (CN); undefined if none. */
  get commonName(): string | undefined {
    return this.#x509.subjectName.getField("CN")[0];
  }

  /** The algorithm of the issuer's signature over the certificate, by its WebCrypto name (`"Ed25519"`). */
  get signatureAlgorithm(): string {
    return this.#x509.signatureAlgorithm.name;
  }

  /** The subject's distinguished name, as RFC 4514 text (`CN=client, O=Org1`). */
  get subject(): string {
    return this.#x509.subject;
  }

  /** The issuer's distinguished name, as RFC 4514 text. */
  get issuer(): string {
    return this.#x509.issuer;
  }

  /** The serial number, lowercase hex. */
  get serialNumber(): string {
    return this.#x509.serialNumber.toLowerCase();
  }

  /** The start of the validity period. */
  get notBefore(): Date {
    return this.#x509.notBefore;
  }

  /** The end of the validity period. */
  get notAfter(): Date {
    return this.#x509.notAfter;
  }

  /** The subject key's algorithm, by its WebCrypto name (`"Ed25519"`), or its OID when WebCrypto has none. */
  get keyAlgorithm(): string {
    return this.#x509.publicKey.algorithm.name;
  }

  /**
   * The subject's Ed25519 public key, its 32 bytes: what an identity is, whatever its
   * certificate's bytes (a revocation names it). Undefined for another kind of key.
   */
  get ed25519PublicKey(): Uint8Array | undefined {
    if (this.keyAlgorithm !== ED25519) return undefined;
    const spki = new Uint8Array(this.#x509.publicKey.rawData);
    // An Ed25519 SubjectPublicKeyInfo: 12 bytes of algorithm and BIT STRING header, the key.
    return spki.length === 44 ? spki.slice(12) : undefined;
  }

  /**
   * The subject's Ed25519 public key, imported for WebCrypto `verify`.
   *
   * @throws TypeError if the key is not Ed25519, or the platform's WebCrypto lacks Ed25519.
   */
  async ed25519Key(): Promise<CryptoKey> {
    if (this.keyAlgorithm !== ED25519) {
      throw new TypeError(`the certificate's key is not Ed25519 but ${this.keyAlgorithm}`);
    }
    try {
      return await this.#x509.publicKey.export({ name: ED25519 }, ["verify"]);
    } catch (error) {
      throw new TypeError(`the certificate's Ed25519 key cannot be imported: ${String(error)}`);
    }
  }

  /** Whether the certificate names itself as its issuer and its own key verifies its signature. */
  async isSelfSigned(): Promise<boolean> {
    try {
      return await this.#x509.isSelfSigned();
    } catch {
      return false;
    }
  }

  /**
   * The certificate among `issuers` that issued this one, found by @peculiar/x509's chain
   * builder: its subject is this certificate's issuer and its key verifies this
   * certificate's signature. The issuer's name must also be byte for byte this
   * certificate's issuer name, as the node compares them. Undefined if none did, or if
   * this certificate is self-signed. Validity dates, key usage and trust in the issuers
   * are not checked here.
   */
  async issuerAmong(issuers: readonly Certificate[]): Promise<Certificate | undefined> {
    const { X509ChainBuilder } = await x509Library();
    const builder = new X509ChainBuilder({ certificates: issuers.map((issuer) => issuer.#x509) });
    let chain;
    try {
      chain = await builder.build(this.#x509);
    } catch {
      return undefined;
    }
    const found = chain[1];
    const issuer = issuers.find((candidate) => candidate.#x509 === found);
    if (issuer === undefined) return undefined;
    const issuerName = new Uint8Array(this.#x509.issuerName.toArrayBuffer());
    const subjectName = new Uint8Array(issuer.#x509.subjectName.toArrayBuffer());
    return equalBytes(issuerName, subjectName) ? issuer : undefined;
  }

  /**
   * Whether `issuer` issued this certificate: its subject is this certificate's issuer
   * and its key verifies this certificate's signature. Validity dates, key usage and
   * trust in `issuer` itself are not checked here.
   */
  async isIssuedBy(issuer: Certificate): Promise<boolean> {
    // Names compared as @peculiar/x509's own chain builder compares them.
    if (this.#x509.issuer !== issuer.#x509.subject) return false;
    try {
      return await this.#x509.verify({ publicKey: issuer.#x509.publicKey, signatureOnly: true });
    } catch {
      return false;
    }
  }
}

/**
 * Parses an X.509 certificate (DER).
 *
 * @throws TypeError if `der` is empty, larger than {@link CERTIFICATE_BYTES_MAX} or not a certificate.
 */
export async function parseCertificate(der: Uint8Array): Promise<Certificate> {
  if (der.length === 0) throw new TypeError("not an X.509 certificate: no bytes");
  if (der.length > CERTIFICATE_BYTES_MAX) {
    throw new TypeError(`not an X.509 certificate: ${der.length} bytes, more than ${CERTIFICATE_BYTES_MAX}`);
  }
  const { X509Certificate } = await x509Library();
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(der as Uint8Array<ArrayBuffer>);
    // Reading the key decodes the SubjectPublicKeyInfo, which the constructor leaves for later.
    void x509.publicKey.algorithm;
  } catch (error) {
    throw new TypeError(`not an X.509 certificate: ${error instanceof Error ? error.message : String(error)}`);
  }
  return new Certificate(der, x509);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
