/**
 * How values read on screen: hashes, bytes, times, durations.
 *
 * Written here, not taken from a library: each is a line or two over the platform's
 * TextDecoder, Date and Intl number formatting, in units and cut-offs of the explorer's
 * own (`850 µs`, `1.42 ms`) that duration libraries such as pretty-ms do not write, and
 * `Uint8Array.prototype.toHex` and `Intl.DurationFormat` are not yet in every browser.
 */

/** The first and last characters of a long hex string: `3fa2…91c0`. */
export function shortHex(hex: string, keep = 8): string {
  return hex.length <= keep * 2 + 1 ? hex : `${hex.slice(0, keep)}…${hex.slice(-4)}`;
}

/** Lowercase hex of bytes. */
export function hex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** The bytes of lowercase or uppercase hex; `undefined` when it is not an even number of hex digits. */
export function hexBytes(text: string): Uint8Array | undefined {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(text)) return undefined;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Bytes as the text they encode, `undefined` when they are not UTF-8. Whatever it holds
 * (controls, bidirectional overrides) is the real text: show it through `LedgerText` or
 * `markedText` (model/text.ts), never as is.
 */
export function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Bytes as text when they are printable UTF-8, else as `0x…` hex: for values, where controls mean binary. */
export function bytesText(bytes: Uint8Array): string {
  if (bytes.length === 0) return "";
  const text = utf8Text(bytes);
  // Control characters other than tab and newlines mean binary.
  if (text !== undefined && !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) return text;
  return `0x${hex(bytes)}`;
}

/**
 * A key as text when it is UTF-8, controls and all (a composite key's U+0000 separators
 * are shown marked, not turned into hex), else as `0x…` hex.
 */
export function keyText(bytes: Uint8Array): string {
  return utf8Text(bytes) ?? `0x${hex(bytes)}`;
}

/** {@link bytesText}, cut to `maxChars` with the full size said: `0x0a05…(93,095 bytes)`. */
export function bytesPreview(bytes: Uint8Array, maxChars = 120): string {
  if (bytes.length > maxChars) {
    // Decoding a module-sized argument only to cut it would cost as much as the row.
    return `${bytesText(utf8Prefix(bytes, Math.floor(maxChars / 2)))}… (${count(bytes.length)} bytes)`;
  }
  const text = bytesText(bytes);
  return text.length > maxChars ? `${textPrefix(text, maxChars)}… (${count(bytes.length)} bytes)` : text;
}

/** The first `n` bytes or fewer, never ending inside a UTF-8 sequence (so text stays text). */
function utf8Prefix(bytes: Uint8Array, n: number): Uint8Array {
  let end = Math.min(n, bytes.length);
  // Back off over continuation bytes (10xxxxxx) to the start of the cut sequence, at most 3.
  for (let back = 0; back < 3 && end > 0 && end < bytes.length && ((bytes[end] ?? 0) & 0xc0) === 0x80; back += 1) end -= 1;
  return bytes.subarray(0, end);
}

/** The first `n` UTF-16 units of `text` or one fewer, never half a surrogate pair (an emoji stays whole or goes). */
export function textPrefix(text: string, n: number): string {
  if (text.length <= n) return text;
  const last = text.charCodeAt(n - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? n - 1 : n);
}

/** Unix milliseconds as a local time with milliseconds: `14:03:07.123`. */
export function clockTime(ms: bigint | number): string {
  const date = new Date(Number(ms));
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** Unix milliseconds as an ISO date and time. */
export function dateTime(ms: bigint | number): string {
  return new Date(Number(ms)).toISOString().replace("T", " ").replace("Z", " UTC");
}

/** Microseconds as a readable duration: `850 µs`, `1.42 ms`, `2.10 s`. */
export function duration(us: number): string {
  if (us < 1_000) return `${Math.round(us)} µs`;
  if (us < 1_000_000) return `${(us / 1_000).toFixed(us < 10_000 ? 2 : 1)} ms`;
  return `${(us / 1_000_000).toFixed(2)} s`;
}

/** A duration for a chart's axis, at most ~6 characters: `850 µs`, `2.5 ms`, `120 ms`, `1.2 s`. */
export function durationShort(us: number): string {
  if (us < 1_000) return `${Math.round(us)} µs`;
  if (us < 10_000) return `${(us / 1_000).toFixed(1)} ms`;
  if (us < 1_000_000) return `${Math.round(us / 1_000)} ms`;
  return `${(us / 1_000_000).toFixed(1)} s`;
}

/** A count with thousands separators. */
export function count(n: number | bigint): string {
  return n.toLocaleString("en-US");
}

/** A validation code for humans: `MVCC_READ_CONFLICT` → `MVCC read conflict`. */
export function codeLabel(code: string): string {
  if (code === "VALID") return "valid";
  const words = code.toLowerCase().split("_");
  return words.map((w) => (["mvcc", "txid"].includes(w) ? w.toUpperCase() : w)).join(" ");
}

/** `1 transaction`, `3 transactions`. */
export function plural(n: number | bigint, noun: string): string {
  return `${count(n)} ${noun}${n === 1 || n === 1n ? "" : "s"}`;
}
