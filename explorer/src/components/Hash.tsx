import type { JSX } from "preact";
import { shortHex } from "../model/format";
import { markedText } from "../model/text";
import { LedgerText } from "./LedgerText";

/**
 * A hex hash, shortened, the whole value in its title and copyable. Marked as ledger text:
 * a hash from an address (`/transactions/<id>`) may be anything.
 */
export function Hash(props: { value: string; full?: boolean }): JSX.Element {
  return (
    <code class="hash" title={markedText(props.value)}>
      <LedgerText text={props.full ? props.value : shortHex(props.value)} />
    </code>
  );
}
