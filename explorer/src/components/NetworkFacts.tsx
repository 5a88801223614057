import { proto, type NetworkInfo } from "@runnel/sdk";
import type { JSX } from "preact";
import { count } from "../model/format";
import { LedgerText } from "./LedgerText";

/** The network the node serves, as it describes itself: channel, organisations, ordering, limits. */
export function NetworkFacts(props: { info: NetworkInfo }): JSX.Element {
  const { info } = props;
  const ordering =
    info.orderingMode === proto.OrderingMode.STREAMING
      ? "streaming: each transaction at once, seals follow"
      : info.orderingMode === proto.OrderingMode.BLOCKS
        ? "blocks: cut, Fabric's way"
        : "unknown";
  return (
    <dl class="facts network" data-testid="network">
      <dt>Channel</dt>
      <dd>
        <LedgerText text={info.channel} />
      </dd>
      <dt>Organisations</dt>
      <dd>
        <LedgerText text={info.orgs.join(", ")} />
      </dd>
      <dt>Ordering</dt>
      <dd>{ordering}</dd>
      <dt>Seals</dt>
      <dd>
        every {count(info.sealMaxTxs)} transactions or {count(info.sealMaxDelayMs)} ms, whichever comes first
      </dd>
      <dt>Limits</dt>
      <dd>
        message {count(info.messageBytesMax)} B, proposal {count(info.proposalBytesMax)} B, transaction {count(info.transactionBytesMax)} B
      </dd>
    </dl>
  );
}
