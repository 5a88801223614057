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
