/**
 * Ledger text made safe to look at. Keys, values, arguments, names and events are
 * whatever a client wrote, and some characters act instead of showing: bidirectional
 * controls (U+202E makes `tr‮eulav` read as `trvalue`), zero-width and other invisible
 * format characters, control characters, tag characters. Left to act, they make one key
 * look like another, or hide text. Here each such character becomes a marker part
 * (`⟨U+202E⟩` on screen, `LedgerText` in components/) and never reaches the page as
 * itself; every other character, any script and emoji included, is kept as it is.
 *
 * This is the one place that decides what is marked: views show ledger text through
 * `LedgerText` (elements) or {@link markedText} (attributes, `<option>`s).
 *
 * Marked: controls (Cc) but tab and newline, format characters (Cf), lone surrogates
 * (Cs), line and paragraph separators (Zl, Zp), and the default-ignorable code points
 * (Hangul fillers, variation selectors, the combining grapheme joiner, ...). Kept where
 * they do a visible job: a zero-width joiner or non-joiner between letters of a script
 * that joins or conjoins them (Persian `می‌خواهم`, Devanagari `क्‍ष`), a zero-width
 * joiner inside an emoji sequence (👩‍💻), one variation selector after a visible character
 * (❤️), and the tags of the flags of England, Scotland and Wales.
 */

/** One piece of ledger text as shown: text as it is, or a character shown as its code point. */
export type TextPart =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "marked"; readonly codePoint: number; readonly marker: string; readonly description: string };

/** What may be marked; the fast path for text with none of it. */
const SUSPECT = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
/** One code point that is marked unless a rule below keeps it. */
const HIDDEN = /^[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]$/u;
/** A letter or mark of a script whose shaping ZWJ and ZWNJ change visibly. */
const JOINING =
  /^(?=[\p{L}\p{M}])[\p{scx=Arab}\p{scx=Syrc}\p{scx=Nkoo}\p{scx=Mong}\p{scx=Deva}\p{scx=Beng}\p{scx=Guru}\p{scx=Gujr}\p{scx=Orya}\p{scx=Taml}\p{scx=Telu}\p{scx=Knda}\p{scx=Mlym}\p{scx=Sinh}\p{scx=Mymr}\p{scx=Khmr}\p{scx=Tibt}]$/u;
const PICTOGRAPHIC = /^\p{Extended_Pictographic}$/u;
const EMOJI_MODIFIER = /^\p{Emoji_Modifier}$/u;
const WHITESPACE = /^\s$/u;
/** The flags of England, Scotland and Wales: 🏴 and the tags `gbeng`, `gbsct`, `gbwls`, then CANCEL TAG. */
const TAG_FLAG = /\u{1F3F4}\u{E0067}\u{E0062}(?:\u{E0065}\u{E006E}\u{E0067}|\u{E0073}\u{E0063}\u{E0074}|\u{E0077}\u{E006C}\u{E0073})\u{E007F}/gu;

const ZWNJ = 0x200c;
const ZWJ = 0x200d;
const VS16 = 0xfe0f;

/** `text` in parts: runs shown as they are, and each character that would act instead of showing, marked. */
export function textParts(text: string): TextPart[] {
  if (!SUSPECT.test(text)) return text.length === 0 ? [] : [{ kind: "text", text }];
  const flags = tagFlagUnits(text);
  const chars = Array.from(text); // code points; a lone surrogate is one of its own
  const parts: TextPart[] = [];
  let run = "";
  let unit = 0; // the UTF-16 offset of chars[i]
  for (let i = 0; i < chars.length; i += 1) {
    const char = chars[i] ?? "";
    if (isHidden(chars, i) && !flags.has(unit)) {
      if (run.length > 0) parts.push({ kind: "text", text: run });
      run = "";
      parts.push(marked(char.codePointAt(0) ?? 0));
    } else {
      run += char;
    }
    unit += char.length;
  }
  if (run.length > 0) parts.push({ kind: "text", text: run });
  return parts;
}

/** `text` as one string with each marked character written as its marker: for attributes and `<option>`s. */
export function markedText(text: string): string {
  if (!SUSPECT.test(text)) return text;
  return textParts(text)
    .map((part) => (part.kind === "text" ? part.text : part.marker))
    .join("");
}

/** `U+202E`. */
export function codePointLabel(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
}

function marked(codePoint: number): TextPart {
  const label = codePointLabel(codePoint);
  return { kind: "marked", codePoint, marker: `⟨${label}⟩`, description: `${label} ${describe(codePoint)}, shown instead of applied` };
}

function isHidden(chars: readonly string[], i: number): boolean {
  const char = chars[i] ?? "";
  if (char === "\t" || char === "\n" || !HIDDEN.test(char)) return false;
  const codePoint = char.codePointAt(0) ?? 0;
  const before = chars[i - 1];
  const after = chars[i + 1];
  if (codePoint === ZWNJ || codePoint === ZWJ) {
    if (before !== undefined && after !== undefined && JOINING.test(before) && JOINING.test(after)) return false;
    if (codePoint === ZWJ && before !== undefined && after !== undefined && emojiBefore(before) && PICTOGRAPHIC.test(after)) return false;
    return true;
  }
  if (isSelector(codePoint)) {
    // One selector picks a visible character's form; a second one, or one after nothing, only hides.
    return before === undefined || HIDDEN.test(before) || WHITESPACE.test(before);
  }
  return true;
}

function emojiBefore(char: string): boolean {
  return PICTOGRAPHIC.test(char) || EMOJI_MODIFIER.test(char) || char.codePointAt(0) === VS16;
}

/** Variation selectors and Mongolian free variation selectors. */
function isSelector(codePoint: number): boolean {
  return (
    (codePoint >= 0xfe00 && codePoint <= 0xfe0f) ||
    (codePoint >= 0xe0100 && codePoint <= 0xe01ef) ||
    (codePoint >= 0x180b && codePoint <= 0x180d) ||
    codePoint === 0x180f
  );
}

/** The UTF-16 offsets of the tag characters that belong to a flag sequence. */
function tagFlagUnits(text: string): Set<number> {
  const units = new Set<number>();
  if (!text.includes("\u{1F3F4}")) return units;
  for (const flag of text.matchAll(TAG_FLAG)) {
    // The flag's 🏴 is two units, each tag two more.
    for (let unit = flag.index + 2; unit < flag.index + flag[0].length; unit += 2) units.add(unit);
  }
  return units;
}

const NAMES: Readonly<Record<number, string>> = {
  0x0000: "NULL",
  0x000d: "CARRIAGE RETURN",
  0x001b: "ESCAPE",
  0x007f: "DELETE",
  0x00ad: "SOFT HYPHEN",
  0x034f: "COMBINING GRAPHEME JOINER",
  0x061c: "ARABIC LETTER MARK",
  0x115f: "HANGUL CHOSEONG FILLER",
  0x1160: "HANGUL JUNGSEONG FILLER",
  0x180e: "MONGOLIAN VOWEL SEPARATOR",
  0x200b: "ZERO WIDTH SPACE",
  0x200c: "ZERO WIDTH NON-JOINER",
  0x200d: "ZERO WIDTH JOINER",
  0x200e: "LEFT-TO-RIGHT MARK",
  0x200f: "RIGHT-TO-LEFT MARK",
  0x2028: "LINE SEPARATOR",
  0x2029: "PARAGRAPH SEPARATOR",
  0x202a: "LEFT-TO-RIGHT EMBEDDING",
  0x202b: "RIGHT-TO-LEFT EMBEDDING",
  0x202c: "POP DIRECTIONAL FORMATTING",
  0x202d: "LEFT-TO-RIGHT OVERRIDE",
  0x202e: "RIGHT-TO-LEFT OVERRIDE",
  0x2060: "WORD JOINER",
  0x2061: "FUNCTION APPLICATION",
  0x2062: "INVISIBLE TIMES",
  0x2063: "INVISIBLE SEPARATOR",
  0x2064: "INVISIBLE PLUS",
  0x2066: "LEFT-TO-RIGHT ISOLATE",
  0x2067: "RIGHT-TO-LEFT ISOLATE",
  0x2068: "FIRST STRONG ISOLATE",
  0x2069: "POP DIRECTIONAL ISOLATE",
  0x3164: "HANGUL FILLER",
  0xfeff: "ZERO WIDTH NO-BREAK SPACE",
  0xffa0: "HALFWIDTH HANGUL FILLER",
};

function describe(codePoint: number): string {
  const name = NAMES[codePoint];
  if (name !== undefined) return name;
  if (codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f)) return "control character";
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return "lone surrogate";
  if (codePoint >= 0xe0000 && codePoint <= 0xe007f) return "tag character";
  if (isSelector(codePoint)) return "variation selector";
  return "invisible character";
}
