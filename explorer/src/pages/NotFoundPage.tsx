import type { JSX } from "preact";
import { Link, paths } from "../router";

/** A path that is no page. */
export function NotFoundPage(): JSX.Element {
  return (
    <>
      <h1>Not found</h1>
      <p>
        No page here. Go to the <Link href={paths.dashboard()}>dashboard</Link>.
      </p>
    </>
  );
}
