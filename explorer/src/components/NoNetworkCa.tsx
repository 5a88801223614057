import type { JSX } from "preact";
import { Link, paths } from "../router";

/** The neutral state of a check made without the network's CA: not verified, and how to verify it. */
export function NoNetworkCa(props: { what: string }): JSX.Element {
  return (
    <>
      <strong>Not verified: no network CA given.</strong>
      <span>
        {" "}
        Without the network's CA certificates, {props.what} cannot be told from one made by anyone.{" "}
        <Link href={paths.settings()}>Give the network's CA certificates</Link>.
      </span>
    </>
  );
}
