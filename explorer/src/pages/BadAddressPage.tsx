import type { JSX } from "preact";
import { LedgerText } from "../components/LedgerText";
import { Link, paths } from "../router";

/** A page's path whose values do not decode: malformed or non-UTF-8 percent-encoding. */
export function BadAddressPage(props: { path: string }): JSX.Element {
  return (
    <>
      <h1>Bad address</h1>
      <p data-testid="bad-address">
        This address does not read: its path <code class="wrap"><LedgerText text={props.path} /></code> has malformed percent-encoding
        (a <code>%</code> not followed by two hex digits, or bytes that are not UTF-8), so it names no block, transaction, contract or key.
      </p>
      <p>
        Go to the <Link href={paths.dashboard()}>dashboard</Link>, or search from the box above.
      </p>
    </>
  );
}
