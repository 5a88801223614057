import type { Block, SealCheck as SealResult } from "@runnel/sdk";
import type { JSX } from "preact";
import { useFeed, useLoad } from "../live/hooks";
import { useGenesisHash } from "../live/genesis-pin";
import { useNetworkCa } from "../live/network-ca";
import { checkSeal } from "../live/trust";
import { count, hex } from "../model/format";
import { CheckVerdict, signedBy } from "./CheckVerdict";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";

/**
 * Checks a block's signed seal here, in the browser (WebCrypto). With a pinned genesis
 * hash (Settings), against the membership followed from it: the seal carries the
 * signatures of the quorum of orderers the definition in force at its last seq names,
 * each certified by that definition's CAs and not revoked, and hashes to the block's hash.
 * Without a pin, against the network CAs given, saying that the membership was not
 * checked; with neither, it says so and shows no ✓.
 */
export function SealCheck(props: { block: Block }): JSX.Element {
  const feed = useFeed();
  const ca = useNetworkCa();
  const hash = useGenesisHash();
  const check = useLoad(async () => {
    const { result, trust } = await checkSeal(feed, props.block, hash, ca);
    return { result, trust, fingerprint: await fingerprint(result.orderer) };
  }, [props.block, ca, hash]);
  if (check.state === "loading") return <p aria-busy="true">Checking the orderers' signatures…</p>;
  if (check.state === "failed") return <p class="check bad">The check could not run: <LedgerText text={check.error} /></p>;
  return <SealCheckResult result={check.value.result} fingerprint={check.value.fingerprint} pinned={check.value.trust === "pinned"} />;
}

/** What a seal check found: ✓, ✕ with the reason, or not verified for want of a network CA. */
export function SealCheckResult(props: { result: SealResult; fingerprint: string; pinned?: boolean }): JSX.Element {
  const { result } = props;
  return (
    <CheckVerdict
      testId="seal-check"
      result={result}
      pinned={props.pinned ?? false}
      verified={[
        "Seal verified",
        props.pinned ? (
          <>{signedBy(result)}; the seal hashes to the block's hash.</>
        ) : (
          <>
            signed by the orderer <LedgerText text={result.ordererName ?? ""} />, whose certificate chains to <LedgerText text={result.ordererOrg ?? ""} />'s CA among the network CAs
            given, with the role orderer, valid when it sealed; the seal hashes to the block's hash.
          </>
        ),
      ]}
      failed="Seal check failed"
      unverified="the orderer's signature over this seal"
    >
      {result.orderer.length > 0 && (
        <>
          <br />
          <small class="muted">
            Orderer certificate: {count(result.orderer.length)} bytes, sha256 <Hash value={props.fingerprint} />
          </small>
        </>
      )}
    </CheckVerdict>
  );
}

async function fingerprint(der: Uint8Array): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", der.slice())));
}
