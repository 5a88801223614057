import type { JSX } from "preact";
import { textParts } from "../model/text";

/**
 * Text that came from the ledger (a key, a value, an argument, a name), shown so that it
 * cannot pass for something else: each character that would act instead of showing (a
 * bidirectional control, an invisible format character, a control character) appears as
 * a marker, `⟨U+202E⟩`, titled with its name (model/text.ts says which). The text is
 * isolated (`<bdi>`), so right-to-left text inside it never reorders what is around it.
 */
export function LedgerText(props: { text: string }): JSX.Element {
  return (
    <bdi class="ledger-text">
      {textParts(props.text).map((part, i) =>
        part.kind === "text" ? (
          part.text
        ) : (
          <span key={i} class="hidden-char" title={part.description} data-code-point={part.codePoint.toString(16)}>
            {part.marker}
          </span>
        ),
      )}
    </bdi>
  );
}
