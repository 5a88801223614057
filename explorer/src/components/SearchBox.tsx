import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { navigate, paths } from "../router";

/** The header's search: a transaction id, a block number or a key. */
export function SearchBox(): JSX.Element {
  const [query, setQuery] = useState("");
  const onSubmit = (event: Event) => {
    event.preventDefault();
    const q = query.trim();
    if (q.length > 0) navigate(paths.search(q));
  };
  return (
    <form role="search" class="search" onSubmit={onSubmit}>
      <input
        type="search"
        name="q"
        placeholder="Tx id, block number or key"
        aria-label="Search by transaction id, block number or key"
        value={query}
        onInput={(event) => setQuery(event.currentTarget.value)}
      />
    </form>
  );
}
