import { verifySeal, type Block, type SealCheck as SealResult } from "@runnel/sdk";
import type { JSX } from "preact";
import { useLoad } from "../live/hooks";
import { count, hex } from "../model/format";
import { Hash } from "./Hash";

/**
 * Checks a block's signed seal here, in the browser (WebCrypto): it hashes to the block's
 * hash, agrees with the block's fields, and the orderer's Ed25519 signature over it
 * verifies. Nothing is taken on the node's word.
 */
export function SealCheck(props: { block: Block }): JSX.Element {
  const check = useLoad(async () => ({ result: await verifySeal(props.block), fingerprint: await fingerprint(props.block) }), [props.block]);
  if (check.state === "loading") return <p aria-busy="true">Checking the orderer's signature…</p>;
  if (check.state === "failed") return <p class="check bad">The check could not run: {check.error}</p>;
  const { result, fingerprint: print } = check.value;
  return <CheckResult result={result} print={print} />;
}

function CheckResult(props: { result: SealResult; print: string }): JSX.Element {
  return (
    <div class={`check ${props.result.valid ? "ok" : "bad"}`} data-testid="seal-check" data-valid={String(props.result.valid)}>
      <strong>{props.result.valid ? "✓ Signature verified" : "✕ Signature check failed"}</strong>
      <span>
        {" "}
        {props.result.valid ? "the orderer's Ed25519 signature over this seal verifies, and the seal hashes to the block's hash." : props.result.reason}
      </span>
      <br />
      <small class="muted">
        Orderer certificate: {count(props.result.orderer.length)} bytes, sha256 <Hash value={props.print} />
      </small>
    </div>
  );
}

async function fingerprint(block: Block): Promise<string> {
  const check = await verifySeal(block);
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", check.orderer.slice())));
}
