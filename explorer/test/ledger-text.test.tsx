/** Components showing hostile ledger text: markers on screen, the raw characters nowhere in it, links to the real bytes. */

import type { KeyModification, TransactionDetail } from "@runnel/sdk";
import { describe, expect, test } from "vitest";
import { KeyHistory } from "../src/components/KeyHistory";
import { LedgerText } from "../src/components/LedgerText";
import { RwSet } from "../src/components/RwSet";
import { BadAddressPage } from "../src/pages/BadAddressPage";
import { mount } from "./mount";

type NsRwSet = NonNullable<TransactionDetail["payload"]>["rwsets"][number];

/** Every character that must never reach the page as itself. */
const ACTING = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/u;


const encode = (text: string) => new TextEncoder().encode(text);

describe("LedgerText", () => {
  test("marks each acting character with a titled marker and keeps the rest, isolated", () => {
    const el = mount(<LedgerText text={"tr\u202Eeulav\u200B!"} />);
    expect(el.textContent).toBe("tr⟨U+202E⟩eulav⟨U+200B⟩!");
    const markers = [...el.querySelectorAll<HTMLElement>(".hidden-char")];
    expect(markers.map((m) => m.textContent)).toEqual(["⟨U+202E⟩", "⟨U+200B⟩"]);
    expect(markers[0]?.title).toBe("U+202E RIGHT-TO-LEFT OVERRIDE, shown instead of applied");
    expect(markers[1]?.title).toContain("ZERO WIDTH SPACE");
    expect(el.querySelector("bdi.ledger-text")).not.toBeNull();
  });

  test("normal text, any script and emoji, renders as is", () => {
    const text = "مرحبا 👩‍💻 नमस्ते 你好";
    const el = mount(<LedgerText text={text} />);
    expect(el.textContent).toBe(text);
    expect(el.querySelector(".hidden-char")).toBeNull();
  });
});

describe("RwSet with a hostile key", () => {
  const key = "balance\u202Efdp.exe";
  const set: NsRwSet = {
    $typeName: "runnel.v1.NsRwSet",
    namespace: "kv",
    reads: [{ $typeName: "runnel.v1.KvRead", key: encode(key), version: undefined }],
    rangeReads: [],
    writes: [{ $typeName: "runnel.v1.KvWrite", key: encode(key), value: encode("\u2066hidden\u2069 value"), isDelete: false }],
  } as unknown as NsRwSet;

  test("shows the key and value marked, and links to the key's real bytes", () => {
    const el = mount(<RwSet rwsets={[set]} />);
    expect(el.textContent).not.toMatch(ACTING);
    const links = [...el.querySelectorAll<HTMLAnchorElement>("a")];
    expect(links).toHaveLength(2);
    for (const link of links) {
      expect(link.textContent).toBe("balance⟨U+202E⟩fdp.exe");
      expect(link.getAttribute("href")).toBe(`/keys/kv/${encodeURIComponent(key)}`);
      expect(link.getAttribute("href")).toContain("%E2%80%AE");
      expect(link.querySelector(".hidden-char")?.getAttribute("title")).toContain("RIGHT-TO-LEFT OVERRIDE");
    }
    expect(el.querySelector("tr.write td.value")?.textContent).toBe("⟨U+2066⟩hidden⟨U+2069⟩ value");
  });

  test("a key that is not UTF-8 shows as hex and links to its bytes in hex", () => {
    const binary = { ...set, reads: [], writes: [{ ...set.writes[0], key: new Uint8Array([0xff, 0x00, 0x41]) }] } as unknown as NsRwSet;
    const el = mount(<RwSet rwsets={[binary]} />);
    const link = el.querySelector<HTMLAnchorElement>("a");
    expect(link?.textContent).toBe("0xff0041");
    expect(link?.getAttribute("href")).toBe("/keys/kv/ff0041?encoding=hex");
  });
});

describe("KeyHistory with hostile values", () => {
  test("values are marked", () => {
    const entries = [{ seq: 3n, transactionId: "ab".repeat(32), value: encode("ok\u202Ekcah"), isDelete: false, timestampMs: 0n }] as unknown as KeyModification[];
    const el = mount(<KeyHistory entries={entries} />);
    expect(el.querySelector("td.value")?.textContent).toBe("ok⟨U+202E⟩kcah");
    expect(el.textContent).not.toMatch(ACTING);
  });
});

describe("BadAddressPage", () => {
  test("says the address does not read, and shows it", () => {
    const el = mount(<BadAddressPage path="/transactions/%zz%" />);
    expect(el.querySelector("h1")?.textContent).toBe("Bad address");
    expect(el.querySelector("[data-testid=bad-address]")?.textContent).toContain("/transactions/%zz%");
  });
});
