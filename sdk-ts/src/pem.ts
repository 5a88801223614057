/** PEM decoding (RFC 7468), platform-neutral. */

import { fromBase64 } from "./bytes.js";

/** The DER bytes of the first PEM block labelled `label` in `pem`. */
export function pemBlock(pem: string, label: string): Uint8Array {
  const begin = `-----BEGIN ${label}-----`;
  const end = `-----END ${label}-----`;
  const start = pem.indexOf(begin);
  const stop = start < 0 ? -1 : pem.indexOf(end, start + begin.length);
  if (start < 0 || stop < 0) {
    throw new TypeError(`not PEM: no ${begin} ... ${end} block`);
  }
  const body = pem.slice(start + begin.length, stop);
  try {
    return fromBase64(body);
  } catch {
    throw new TypeError(`PEM ${label}: the body is not base64`);
  }
}

/** Most PEM blocks read from one text: more certificates than any network has CAs. */
export const PEM_BLOCKS_MAX = 64;

/**
 * The DER bytes of every PEM block labelled `label` in `pem`, in order (a bundle, such as
 * the CA certificates of several organisations in one file).
 *
 * @throws TypeError if there is none, more than {@link PEM_BLOCKS_MAX}, or one is not base64.
 */
export function pemBlocks(pem: string, label: string): Uint8Array[] {
  const end = `-----END ${label}-----`;
  const blocks: Uint8Array[] = [];
  let rest = pem;
  for (;;) {
    const at = rest.indexOf(`-----BEGIN ${label}-----`);
    if (at < 0) break;
    if (blocks.length === PEM_BLOCKS_MAX) throw new TypeError(`PEM: more than ${PEM_BLOCKS_MAX} ${label} blocks`);
    rest = rest.slice(at);
    blocks.push(pemBlock(rest, label));
    const stop = rest.indexOf(end);
    rest = rest.slice(stop + end.length);
  }
  if (blocks.length === 0) throw new TypeError(`not PEM: no -----BEGIN ${label}----- ... ${end} block`);
  return blocks;
}
