import type { Gateway } from "@runnel/sdk";
import type { JSX } from "preact";
import { useEffect } from "preact/hooks";
import { CodeBadge } from "../components/CodeBadge";
import { Hash } from "../components/Hash";
import { LedgerText } from "../components/LedgerText";
import { useFeed, useLoad } from "../live/hooks";
import { bytesPreview } from "../model/format";
import { lookups } from "../model/search";
import { Link, navigate, paths } from "../router";

/** A thing the search found. */
interface Found {
  readonly href: string;
  readonly what: JSX.Element;
  readonly detail: JSX.Element;
}

/** Results of a search: every meaning of the query that exists; one result opens at once. */
export function SearchPage(props: { q: string }): JSX.Element {
  const feed = useFeed();
  const results = useLoad(() => search(feed.gateway, props.q), [props.q]);
  useEffect(() => {
    const only = results.state === "ready" && results.value.length === 1 ? results.value[0] : undefined;
    if (only !== undefined) navigate(only.href, { replace: true });
  }, [results]);
  return (
    <>
      <h1>
        Search:{" "}
        <q>
          <LedgerText text={props.q} />
        </q>
      </h1>
      {results.state === "loading" && <p aria-busy="true">Searching…</p>}
      {results.state === "failed" && (
        <p class="error">
          <LedgerText text={results.error} />
        </p>
      )}
      {results.state === "ready" &&
        (results.value.length === 0 ? (
          <p data-testid="no-results">
            Nothing found. Search by a transaction id (64 hex digits), a block number, or a key (<code>kv:greeting</code>, or a key
            in any contract).
          </p>
        ) : (
          <ul class="results" aria-label="Search results">
            {results.value.map((found) => (
              <li key={found.href}>
                <Link href={found.href}>{found.what}</Link> {found.detail}
              </li>
            ))}
          </ul>
        ))}
    </>
  );
}

async function search(gateway: Gateway, q: string): Promise<Found[]> {
  const query = gateway.getQuery();
  const contracts = (await query.listContracts({ limit: 1000 })).map((c) => c.name);
  const found: Found[] = [];
  await Promise.all(
    lookups(q, contracts).map(async (lookup) => {
      try {
        if (lookup.kind === "transaction") {
          const tx = await query.getTransaction(lookup.id);
          found.push({ href: paths.transaction(tx.txId), what: <>Transaction <LedgerText text={`${tx.txId.slice(0, 12)}…`} /></>, detail: <CodeBadge code={tx.codeName} /> });
        } else if (lookup.kind === "block") {
          const block = await query.getBlock(lookup.number);
          found.push({ href: paths.block(block.number), what: <>Block #{block.number.toString()}</>, detail: <Hash value={block.hash} /> });
        } else {
          const namespaces = lookup.namespace !== undefined ? [lookup.namespace] : contracts;
          await Promise.all(
            namespaces.map(async (namespace) => {
              const value = await query.getKey(namespace, lookup.key);
              if (value.found) {
                found.push({
                  href: paths.key(namespace, lookup.key),
                  what: (
                    <>
                      Key <LedgerText text={lookup.key} /> in <LedgerText text={namespace} />
                    </>
                  ),
                  detail: (
                    <code>
                      <LedgerText text={bytesPreview(value.value, 80)} />
                    </code>
                  ),
                });
              }
            }),
          );
        }
      } catch {
        // Not found (or not that kind of thing): no result.
      }
    }),
  );
  return found.sort((a, b) => a.href.localeCompare(b.href));
}
