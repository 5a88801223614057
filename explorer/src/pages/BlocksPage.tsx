import type { JSX } from "preact";
import { BlockList } from "../components/BlockList";
import { useSnapshot } from "../live/hooks";
import { count } from "../model/format";

/** Every sealed block, live. */
export function BlocksPage(): JSX.Element {
  const { blocks, info } = useSnapshot();
  return (
    <>
      <h1>Blocks</h1>
      <p class="muted">
        Blocks are signed boundaries the orderer draws over the ordered stream; transactions never wait for them. Height{" "}
        <strong data-testid="block-height">{info ? count(info.blockHeight) : "—"}</strong>; the newest {count(blocks.length)} shown, live.
      </p>
      <BlockList blocks={blocks} height={600} />
    </>
  );
}
