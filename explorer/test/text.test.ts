/**
 * Ledger text as shown: every character that would act instead of showing is marked,
 * everything else (any script, emoji) is kept as it is; a key's link keeps its exact
 * bytes; an address that does not percent-decode is a bad address, not a crash.
 */

import { describe, expect, test } from "vitest";
import { bytesPreview, keyText, textPrefix } from "../src/model/format";
import { markedText, textParts } from "../src/model/text";
import { match, paths } from "../src/router";

/** The code points `text` marks, in hex. */
function markedOf(text: string): string[] {
  return textParts(text).flatMap((part) => (part.kind === "marked" ? [part.codePoint.toString(16)] : []));
}

describe("textParts and markedText", () => {
  test("a right-to-left override is marked, never kept: the key reads as written", () => {
    const parts = textParts("tr\u202Eeulav");
    expect(parts).toEqual([
      { kind: "text", text: "tr" },
      expect.objectContaining({ kind: "marked", codePoint: 0x202e, marker: "⟨U+202E⟩", description: expect.stringContaining("RIGHT-TO-LEFT OVERRIDE") }),
      { kind: "text", text: "eulav" },
    ]);
    expect(markedText("tr\u202Eeulav")).toBe("tr⟨U+202E⟩eulav");
  });

  test("each bidirectional control is marked", () => {
    const bidi = [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c];
    for (const codePoint of bidi) {
      const char = String.fromCodePoint(codePoint);
      expect(markedOf(`a${char}b`), codePoint.toString(16)).toEqual([codePoint.toString(16)]);
      expect(markedText(`a${char}b`)).not.toContain(char);
    }
  });

  test("invisible format characters are marked: zero-width, word joiner, invisible operators, BOM, soft hyphen, tags", () => {
    const invisible = [0x200b, 0x200c, 0x200d, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff, 0x00ad, 0xe0001, 0xe0041, 0xe007f, 0x3164, 0x034f, 0x180e];
    for (const codePoint of invisible) {
      expect(markedOf(`ad${String.fromCodePoint(codePoint)}min`), codePoint.toString(16)).toEqual([codePoint.toString(16)]);
    }
    // Tag characters spelling hidden ASCII ("hi") are each marked.
    expect(markedText("ok\u{E0068}\u{E0069}")).toBe("ok⟨U+E0068⟩⟨U+E0069⟩");
  });

  test("control characters are marked, tab and newline kept; line and paragraph separators marked", () => {
    expect(markedOf("a\u0000b\u0001c\u001bd\u007fe\u0085f\u009fg")).toEqual(["0", "1", "1b", "7f", "85", "9f"]);
    expect(markedOf("a\rb")).toEqual(["d"]);
    expect(textParts("one\ttwo\nthree")).toEqual([{ kind: "text", text: "one\ttwo\nthree" }]);
    expect(markedOf("a\u2028b\u2029c")).toEqual(["2028", "2029"]);
  });

  test("a string of only controls is all markers, nothing raw", () => {
    const parts = textParts("\u202E\u2066\u200B\u0000");
    expect(parts.every((part) => part.kind === "marked")).toBe(true);
    expect(markedText("\u202E\u2066\u200B\u0000")).toBe("⟨U+202E⟩⟨U+2066⟩⟨U+200B⟩⟨U+0000⟩");
    expect(textParts("")).toEqual([]);
  });

  test("a lone surrogate is marked; a surrogate pair is one character, kept", () => {
    expect(markedText("a\uD800b")).toBe("a⟨U+D800⟩b");
    expect(markedText("x\uDFFF")).toBe("x⟨U+DFFF⟩");
    expect(markedText("\uD83D\uDE00\u202E")).toBe("😀⟨U+202E⟩");
    expect(markedText("\u{1D11E}\u{20000}")).toBe("\u{1D11E}\u{20000}");
  });

  test("normal text in any script, and emoji, is kept exactly", () => {
    const texts = [
      "greeting",
      "Grüße, naïve café",
      "Привет мир",
      "Γειά σου",
      "مرحبا بالعالم",
      "שלום עולם",
      "नमस्ते दुनिया",
      "こんにちは世界",
      "你好，世界",
      "안녕하세요",
      "ສະບາຍດີ",
      "👍 🎉 😀",
      "❤️ ☺️ 1️⃣",
      "👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🏳️‍⚧️ 🧑🏽‍🚀 👩‍❤️‍💋‍👨",
      "🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁥󠁮󠁧󠁿 🏴󠁧󠁢󠁷󠁬󠁳󠁿",
      "👋🏾 🇫🇷 🇯🇵",
      // ZWNJ in Persian and ZWJ in Devanagari shape the text: they stay.
      "می\u200Cخواهم",
      "क्\u200Dष",
      'a "json" {value: [1, 2]}\twith tab\nand newline',
    ];
    for (const text of texts) {
      expect(textParts(text), text).toEqual([{ kind: "text", text }]);
      expect(markedText(text)).toBe(text);
    }
  });

  test("joiners and selectors that only hide are marked", () => {
    // Between Latin letters a ZWJ or ZWNJ changes nothing visible: "ad‌min" passing for "admin".
    expect(markedOf("ad\u200Cmin")).toEqual(["200c"]);
    expect(markedOf("ad\u200Dmin")).toEqual(["200d"]);
    // A variation selector at the start, after a space, or after another: hidden payload.
    expect(markedOf("\uFE0Fa")).toEqual(["fe0f"]);
    expect(markedOf("a \uFE0F")).toEqual(["fe0f"]);
    expect(markedOf("a\u{E0100}\u{E0101}\u{E0102}")).toEqual(["e0101", "e0102"]);
    // A tag sequence that is no flag: its tags are marked, the black flag kept.
    expect(markedText("\u{1F3F4}\u{E0061}\u{E0062}\u{E007F}")).toBe("\u{1F3F4}⟨U+E0061⟩⟨U+E0062⟩⟨U+E007F⟩");
  });

  test("a marker in the text itself stays text: only real markers are parts of their own", () => {
    expect(textParts("⟨U+202E⟩")).toEqual([{ kind: "text", text: "⟨U+202E⟩" }]);
  });
});

describe("bytes for display", () => {
  test("a key that is UTF-8 is its text, controls and all (marked later); one that is not is hex", () => {
    expect(keyText(new TextEncoder().encode("\u0000asset\u0000id1\u0000"))).toBe("\u0000asset\u0000id1\u0000");
    expect(keyText(new Uint8Array([0xc3, 0x28]))).toBe("0xc328");
  });

  test("previews never cut an emoji or a multi-byte character in half", () => {
    expect(textPrefix("ab😀", 3)).toBe("ab");
    expect(textPrefix("ab😀", 4)).toBe("ab😀");
    const long = new TextEncoder().encode("😀".repeat(40));
    const preview = bytesPreview(long, 20);
    expect(preview).toMatch(/^(😀)+… \(160 bytes\)$/u);
    expect(markedText(preview)).toBe(preview);
    const text = bytesPreview(new TextEncoder().encode(`a${"😀".repeat(30)}`), 120);
    expect(markedText(text)).toBe(text);
  });
});

describe("addresses", () => {
  test("a key's link carries its exact bytes, percent-encoded; its page reads them back", () => {
    const key = "tr\u202Eeulav";
    const href = paths.key("kv", new TextEncoder().encode(key));
    expect(href).toBe("/keys/kv/tr%E2%80%AEeulav");
    expect(match(href)).toMatchObject({ page: "key", params: { namespace: "kv", key } });
    expect(paths.key("kv", "a\u0000b")).toBe("/keys/kv/a%00b");
    // Not UTF-8: hex, said so in the query.
    const [path, query] = paths.key("kv", new Uint8Array([0xff, 0x00])).split("?");
    expect(path).toBe("/keys/kv/ff00");
    expect(query).toBe("encoding=hex");
  });

  test("a path that does not percent-decode is a bad address, not an exception", () => {
    for (const path of ["/transactions/%zz%", "/keys/kv/%E0%A4%A", "/keys/kv/%", "/contracts/%ED%A0%80", "/blocks/%C3%28"]) {
      expect(() => match(path), path).not.toThrow();
      expect(match(path), path).toMatchObject({ page: "bad-address", params: { path } });
    }
    // Unknown pages stay not found, whatever their encoding.
    expect(match("/nowhere/%zz").page).toBe("not-found");
  });
});
