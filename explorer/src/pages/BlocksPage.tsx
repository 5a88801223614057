import type { JSX } from "preact";
import { BlockList } from "../components/BlockList";
import { useSnapshot } from "../live/hooks";
import { count } from "../model/format";

/** Every sealed block, live. */
export function BlocksPage(): JSX.Element {
  const { blocks, info } = useSnapshot();
  // The stream runs ahead of the info poll: take whichever is further.
  const newest = blocks[0]?.number;
  const polled = info?.blockHeight;
  const height = newest === undefined ? polled : polled === undefined || newest > polled ? newest : polled;
  return (
    <>
      <h1>Blocks</h1>
      <p class="muted">
        Blocks are signed boundaries the orderer draws over the ordered stream; transactions never wait for them. Height{" "}
        <strong data-testid="block-height">{height === undefined ? "—" : count(height)}</strong>; the newest {count(blocks.length)} shown, live.
      </p>
      <BlockList blocks={blocks} height={600} />
    </>
  );
}
