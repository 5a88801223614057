/** Small byte helpers shared by the SDK's modules (no platform dependency). */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A contract argument: text (sent as its UTF-8 bytes) or raw bytes. */
export type Argument = string | Uint8Array;

/** The bytes of an argument: UTF-8 for text, as given for bytes. */
export function argumentBytes(arg: Argument): Uint8Array {
  return typeof arg === "string" ? encoder.encode(arg) : arg;
}

/** UTF-8 text of `bytes`. */
export function utf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/** UTF-8 bytes of `text`. */
export function utf8Bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) {
    out += byte.toString(16).padStart(2, "0");
  }
  return out;
}

/** `parts` joined into one array. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Standard base64 of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The bytes of standard base64 `text` (whitespace ignored). */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/\s+/g, ""));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
