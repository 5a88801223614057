import type { JSX } from "preact";
import { Link, paths } from "../router";

/** The neutral state of a check made with nothing to trust: not verified, and how to verify it. */
export function NoNetworkCa(props: { what: string }): JSX.Element {
  return (
    <>
      <strong>Not verified: no network CA given.</strong>
      <span>
        {" "}
        No genesis hash is pinned and no network CA given: {props.what} cannot be told from one made by anyone.{" "}
        <Link href={paths.settings()}>Pin the network's genesis hash</Link> (<code>runnel config genesis-hash</code>), or{" "}
        <Link href={paths.settings()}>Give the network's CA certificates</Link>.
      </span>
    </>
  );
}
