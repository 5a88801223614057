/**
 * What a search box query can mean. One text may mean several things (`42` is a block
 * number and could be a key): the search page looks each meaning up and lists what exists.
 *
 * Read here, not by a query-language library: the grammar is Runnel's own (an id, a block
 * number, a key with or without its contract) and a few lines long.
 */

/** One thing to look up for a query. */
export type Lookup =
  | { readonly kind: "transaction"; readonly id: string }
  | { readonly kind: "block"; readonly number: bigint }
  | { readonly kind: "key"; readonly namespace: string | undefined; readonly key: string };

const TX_ID = /^[0-9a-f]{64}$/;
const BLOCK = /^#?(\d{1,19})$/;

/**
 * The lookups for a query: a 64-hex-digit id is a transaction; digits (or `#12`) a block;
 * anything is a key, in `namespace:key` or `namespace/key` form when the part before the
 * separator names a contract, else in every contract.
 */
export function lookups(query: string, contracts: readonly string[]): Lookup[] {
  const q = query.trim();
  if (q.length === 0) return [];
  const out: Lookup[] = [];
  const lower = q.toLowerCase();
  if (TX_ID.test(lower)) out.push({ kind: "transaction", id: lower });
  const block = BLOCK.exec(q);
  if (block?.[1] !== undefined && BigInt(block[1]) > 0n) out.push({ kind: "block", number: BigInt(block[1]) });
  const separator = /[:/]/.exec(q);
  const prefix = separator ? q.slice(0, separator.index) : undefined;
  if (separator && prefix !== undefined && contracts.includes(prefix)) {
    out.push({ kind: "key", namespace: prefix, key: q.slice(separator.index + 1) });
  } else {
    out.push({ kind: "key", namespace: undefined, key: q });
  }
  return out;
}
