import type { JSX } from "preact";
import { shortHex } from "../model/format";

/** A hex hash, shortened, the whole value in its title and copyable. */
export function Hash(props: { value: string; full?: boolean }): JSX.Element {
  return (
    <code class="hash" title={props.value}>
      {props.full ? props.value : shortHex(props.value)}
    </code>
  );
}
