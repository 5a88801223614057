import { verifyInclusionProof, type InclusionCheck, type InclusionProof } from "@runnel/sdk";
import type { JSX } from "preact";
import { useFeed, useLoad } from "../live/hooks";
import { hex } from "../model/format";
import { Hash } from "./Hash";

/**
 * Fetches a transaction's inclusion proof and checks it here, in the browser: the
 * transaction's hash is the Merkle leaf, the audit path leads from it to the seal's root,
 * and the orderer's signature over the seal verifies.
 */
export function InclusionProofCheck(props: { transactionId: string }): JSX.Element {
  const feed = useFeed();
  const check = useLoad(async () => {
    const proof = await feed.gateway.getQuery().getInclusionProof(props.transactionId);
    return { proof, result: await verifyInclusionProof(proof) };
  }, [props.transactionId]);
  if (check.state === "loading") return <p aria-busy="true">Fetching and checking the proof…</p>;
  if (check.state === "failed") return <p class="check bad">No proof: {check.error}</p>;
  return <ProofResult proof={check.value.proof} result={check.value.result} />;
}

function ProofResult(props: { proof: InclusionProof; result: InclusionCheck }): JSX.Element {
  const { proof, result } = props;
  return (
    <div class={`check ${result.valid ? "ok" : "bad"}`} data-testid="inclusion-check" data-valid={String(result.valid)}>
      <strong>{result.valid ? "✓ Inclusion verified" : "✕ Inclusion check failed"}</strong>
      <span>
        {" "}
        {result.valid
          ? `transaction seq ${proof.seq} is in block #${proof.block.number}: its path leads to the seal's Merkle root, and the orderer's signature verifies.`
          : result.reason}
      </span>
      <dl class="facts">
        <dt>Leaf (sha256 of the transaction)</dt>
        <dd>
          <Hash value={result.leaf} full />
        </dd>
        <dt>Audit path</dt>
        <dd>
          {proof.path.length === 0 ? (
            <span class="muted">empty: the block's only transaction</span>
          ) : (
            <ol class="args">
              {proof.path.map((sibling, i) => (
                <li key={i}>
                  <Hash value={hex(sibling)} />
                </li>
              ))}
            </ol>
          )}
        </dd>
        <dt>Computed root</dt>
        <dd>
          <Hash value={result.computedRoot} full />
        </dd>
        <dt>Seal's root</dt>
        <dd>
          <Hash value={proof.block.txRoot} full />
        </dd>
      </dl>
    </div>
  );
}
