import type { InclusionCheck, InclusionProof } from "@runnel/sdk";
import type { JSX } from "preact";
import { useFeed, useLoad } from "../live/hooks";
import { useGenesisHash } from "../live/genesis-pin";
import { useNetworkCa } from "../live/network-ca";
import { checkProof } from "../live/trust";
import { dateTime, hex } from "../model/format";
import { CheckVerdict, signedBy } from "./CheckVerdict";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";

/**
 * Fetches a transaction's inclusion proof and checks it here, in the browser: the proof's
 * transaction is the one asked about, its bytes with the orderer's timestamp hash to the
 * Merkle leaf, the audit path leads from it to the seal's root, and the seal holds as
 * SealCheck checks it (the pinned membership, else the network CAs given, else nothing
 * and no ✓).
 */
export function InclusionProofCheck(props: { transactionId: string }): JSX.Element {
  const feed = useFeed();
  const ca = useNetworkCa();
  const hash = useGenesisHash();
  const check = useLoad(async () => {
    const proof = await feed.gateway.getQuery().getInclusionProof(props.transactionId);
    const { result, trust } = await checkProof(feed, proof, props.transactionId, hash, ca);
    return { proof, result, pinned: trust === "pinned" };
  }, [props.transactionId, ca, hash]);
  if (check.state === "loading") return <p aria-busy="true">Fetching and checking the proof…</p>;
  if (check.state === "failed") return <p class="check bad">No proof: <LedgerText text={check.error} /></p>;
  return <ProofResult proof={check.value.proof} result={check.value.result} pinned={check.value.pinned} />;
}

/** What an inclusion check found, with the ordered time, the leaf, the path and both roots. */
export function ProofResult(props: { proof: InclusionProof; result: InclusionCheck; pinned?: boolean }): JSX.Element {
  const { proof, result } = props;
  const placed = (
    <>
      transaction seq {proof.seq.toString()}, ordered at {orderedTime(proof.timestampMs)}, is in block #{proof.block.number.toString()}: its path leads to the seal's Merkle
      root, and the seal is
    </>
  );
  return (
    <CheckVerdict
      testId="inclusion-check"
      result={result}
      pinned={props.pinned ?? false}
      verified={[
        "Inclusion verified",
        props.pinned ? (
          <>
            {placed} {signedBy(result)}.
          </>
        ) : (
          <>
            {placed} signed by the orderer <LedgerText text={result.ordererName ?? ""} /> of <LedgerText text={result.ordererOrg ?? ""} />'s CA.
          </>
        ),
      ]}
      failed="Inclusion check failed"
      unverified="the seal this proof leads to"
    >
      <dl class="facts">
        <dt>Ordered at (the orderer's time, in the leaf)</dt>
        <dd data-testid="proof-time">
          {orderedTime(proof.timestampMs)} <span class="muted">({proof.timestampMs.toString()} ms)</span>
        </dd>
        <dt>Leaf (sha256 of "runnel.leaf.v1", the ordered time and the transaction)</dt>
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
    </CheckVerdict>
  );
}

/** The proof's timestamp as a date, or "not a date" beyond the range of dates (a node's answer is not trusted). */
function orderedTime(ms: bigint): string {
  return Number.isNaN(new Date(Number(ms)).getTime()) ? "not a date" : dateTime(ms);
}
