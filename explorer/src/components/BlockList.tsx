import type { Block } from "@runnel/sdk";
import type { JSX } from "preact";
import { clockTime } from "../model/format";
import { Link, paths } from "../router";
import { Hash } from "./Hash";
import { VirtualList } from "./VirtualList";

const ROW_HEIGHT = 40;

/** Sealed blocks, newest first, virtualised. */
export function BlockList(props: { blocks: readonly Block[]; height?: number }): JSX.Element {
  return (
    <VirtualList
      label="Blocks"
      items={props.blocks}
      rowHeight={ROW_HEIGHT}
      height={props.height ?? 480}
      rowKey={(block) => block.number.toString()}
      empty={<p class="muted">No blocks sealed yet.</p>}
      header={
        <>
          <span role="columnheader" class="c-num">Block</span>
          <span role="columnheader" class="c-range">Seqs</span>
          <span role="columnheader" class="c-count">Txs</span>
          <span role="columnheader" class="c-hash">Hash</span>
          <span role="columnheader" class="c-time">Sealed</span>
        </>
      }
      renderRow={(block) => (
        <>
          <span role="cell" class="c-num">
            <Link href={paths.block(block.number)} data-block={block.number.toString()}>
              #{block.number.toString()}
            </Link>
          </span>
          <span role="cell" class="c-range">
            {block.firstSeq.toString()}–{block.lastSeq.toString()}
          </span>
          <span role="cell" class="c-count">{(block.lastSeq - block.firstSeq + 1n).toString()}</span>
          <span role="cell" class="c-hash">
            <Hash value={block.hash} />
          </span>
          <span role="cell" class="c-time">{clockTime(block.timestampMs)}</span>
        </>
      )}
    />
  );
}
