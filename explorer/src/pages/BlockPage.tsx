import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { CodeBadge } from "../components/CodeBadge";
import { Hash } from "../components/Hash";
import { InclusionProofCheck } from "../components/InclusionProofCheck";
import { LedgerText } from "../components/LedgerText";
import { SealCheck } from "../components/SealCheck";
import { useFeed, useLoad, useSnapshot } from "../live/hooks";
import { count, dateTime, plural } from "../model/format";
import { Link, paths } from "../router";

/** One block: its seal, the orderer's signature checked here, its transactions and their inclusion proofs. */
export function BlockPage(props: { number: string }): JSX.Element {
  const feed = useFeed();
  const valid = /^\d+$/.test(props.number) && props.number !== "0";
  const number = valid ? BigInt(props.number) : 0n;
  const [proving, setProving] = useState<string | undefined>(undefined);
  // A block not sealed yet loads again once the live feed sees it sealed.
  const sealed = (useSnapshot().blocks[0]?.number ?? 0n) >= number ? 1 : 0;
  const block = useLoad(
    async () => (valid ? feed.gateway.getQuery().getBlock(number) : Promise.reject(new Error("a block number is 1 or more"))),
    [props.number],
    sealed,
  );
  return (
    <>
      <h1>
        Block #<LedgerText text={props.number} />
      </h1>
      <nav aria-label="Neighbouring blocks" class="pager">
        {number > 1n && <Link href={paths.block(number - 1n)}>← #{(number - 1n).toString()}</Link>}
        <Link href={paths.block(number + 1n)}>#{(number + 1n).toString()} →</Link>
      </nav>
      {block.state === "loading" && <p aria-busy="true">Loading the block…</p>}
      {block.state === "failed" && (
        <p class="error">
          <LedgerText text={block.error} />
        </p>
      )}
      {block.state === "ready" && (
        <>
          <section aria-labelledby="seal-heading">
            <h2 id="seal-heading">Seal</h2>
            <dl class="facts" data-testid="seal">
              <dt>Number</dt>
              <dd>{block.value.number.toString()}</dd>
              <dt>Seqs</dt>
              <dd>
                {block.value.firstSeq.toString()}–{block.value.lastSeq.toString()} ({plural(block.value.lastSeq - block.value.firstSeq + 1n, "transaction")})
              </dd>
              <dt>Sealed at</dt>
              <dd>{dateTime(block.value.timestampMs)}</dd>
              <dt>Hash</dt>
              <dd>
                <Hash value={block.value.hash} full />
              </dd>
              <dt>Previous hash</dt>
              <dd>
                {number > 1n ? (
                  <Link href={paths.block(number - 1n)}>
                    <Hash value={block.value.previousHash} full />
                  </Link>
                ) : (
                  <Hash value={block.value.previousHash} full />
                )}
              </dd>
              <dt>Merkle root</dt>
              <dd>
                <Hash value={block.value.txRoot} full />
              </dd>
              <dt>Signed seal</dt>
              <dd>{count(block.value.signedSeal.length)} bytes</dd>
            </dl>
          </section>
          <section aria-labelledby="signature-heading">
            <h2 id="signature-heading">Signature check</h2>
            <SealCheck block={block.value} />
          </section>
          <section aria-labelledby="block-txs-heading">
            <h2 id="block-txs-heading">Transactions</h2>
            <table aria-labelledby="block-txs-heading" class="striped">
              <thead>
                <tr>
                  <th scope="col">Seq</th>
                  <th scope="col">Transaction</th>
                  <th scope="col">Status</th>
                  <th scope="col">Inclusion proof</th>
                </tr>
              </thead>
              <tbody>
                {block.value.transactions.map((tx) => (
                  <tr key={tx.seq.toString()}>
                    <td class="num">{tx.seq.toString()}</td>
                    <td>
                      <Link href={paths.transaction(tx.transactionId)}>
                        <Hash value={tx.transactionId} />
                      </Link>
                    </td>
                    <td>
                      <CodeBadge code={tx.code} />
                    </td>
                    <td>
                      <button
                        type="button"
                        class="outline small"
                        aria-pressed={proving === tx.transactionId}
                        onClick={() => setProving(tx.transactionId)}
                        aria-label={`Verify the inclusion of transaction ${tx.seq}`}
                      >
                        Verify
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {proving !== undefined && (
              <section aria-labelledby="proof-heading" aria-live="polite">
                <h3 id="proof-heading">
                  Inclusion proof of <Hash value={proving} />
                </h3>
                <InclusionProofCheck transactionId={proving} />
              </section>
            )}
          </section>
        </>
      )}
    </>
  );
}
