/**
 * The network's CA certificates, as the user gave them on the Settings page, kept in this
 * browser (localStorage). The seal and inclusion checks trust these and nothing else. They
 * never come from the node being checked: a node that made up its own CA would vouch for
 * itself, and the node's API serves no CA certificates anyway.
 */

import { useEffect, useState } from "preact/hooks";

const STORAGE_KEY = "runnel-explorer-network-ca";
const CHANGED = "runnel:network-ca";

/** Most PEM text kept, in characters: a network's CAs are ~600 characters each. */
export const NETWORK_CA_CHARS_MAX = 64 * 1024;

/** The CA certificates given (PEM text); empty when none. */
export function savedNetworkCa(): string {
  try {
    return localStorage.getItem(STORAGE_KEY) ?? "";
  } catch {
    // Storage refused (a privacy mode): nothing given.
    return "";
  }
}

/**
 * Keeps `pem` as the network's CA certificates (empty: forgets them) and tells the views.
 *
 * @throws RangeError if it is longer than {@link NETWORK_CA_CHARS_MAX}.
 */
export function saveNetworkCa(pem: string): void {
  const text = pem.trim();
  if (text.length > NETWORK_CA_CHARS_MAX) {
    throw new RangeError(`${text.length} characters of PEM, more than ${NETWORK_CA_CHARS_MAX}`);
  }
  if (text === "") localStorage.removeItem(STORAGE_KEY);
  else localStorage.setItem(STORAGE_KEY, `${text}\n`);
  window.dispatchEvent(new Event(CHANGED));
}

/** What a check trusts for `pem`: nothing when it is empty. */
export function trustedCas(pem: string): string[] {
  return pem.trim() === "" ? [] : [pem];
}

/** The CA certificates given; re-renders when they change, here or in another tab. */
export function useNetworkCa(): string {
  const [pem, setPem] = useState(savedNetworkCa);
  useEffect(() => {
    const update = () => setPem(savedNetworkCa());
    window.addEventListener(CHANGED, update);
    window.addEventListener("storage", update);
    return () => {
      window.removeEventListener(CHANGED, update);
      window.removeEventListener("storage", update);
    };
  }, []);
  return pem;
}
