import { verifySeal, type Block, type SealCheck as SealResult } from "@runnel/sdk";
import type { JSX } from "preact";
import { useLoad } from "../live/hooks";
import { trustedCas, useNetworkCa } from "../live/network-ca";
import { count, hex } from "../model/format";
import { CheckVerdict } from "./CheckVerdict";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";

/**
 * Checks a block's signed seal here, in the browser (WebCrypto), against the network CAs
 * the user gave (Settings): the seal hashes to the block's hash and agrees with its
 * fields, the orderer's certificate chains to one of those CAs with the role orderer and
 * was valid when it sealed, and its Ed25519 signature over the seal verifies. Without a
 * network CA it says so, and shows no ✓.
 */
export function SealCheck(props: { block: Block }): JSX.Element {
  const ca = useNetworkCa();
  const check = useLoad(async () => {
    const result = await verifySeal(props.block, { trustedCas: trustedCas(ca) });
    return { result, fingerprint: await fingerprint(result.orderer) };
  }, [props.block, ca]);
  if (check.state === "loading") return <p aria-busy="true">Checking the orderer's signature…</p>;
  if (check.state === "failed") return <p class="check bad">The check could not run: <LedgerText text={check.error} /></p>;
  return <SealCheckResult result={check.value.result} fingerprint={check.value.fingerprint} />;
}

/** What a seal check found: ✓, ✕ with the reason, or not verified for want of a network CA. */
export function SealCheckResult(props: { result: SealResult; fingerprint: string }): JSX.Element {
  const { result } = props;
  return (
    <CheckVerdict
      testId="seal-check"
      result={result}
      verified={[
        "Seal verified",
        <>
          signed by the orderer <LedgerText text={result.ordererName ?? ""} />, whose certificate chains to <LedgerText text={result.ordererOrg ?? ""} />'s CA among the network CAs given,
          with the role orderer, valid when it sealed; the seal hashes to the block's hash.
        </>,
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
