/**
 * Checkpointers remember how far a reader of events or blocks has got, so that a new
 * stream resumes right after the last item processed: no gap, no duplicate. Unlike
 * Fabric's (block, transaction id) checkpoints, a Runnel event checkpoint is exact: the
 * event's place `(seq, index)` in the ordered stream.
 *
 * Usage, as with fabric-gateway: process an item, then checkpoint it.
 */

import type { ContractEvent, EventCheckpoint } from "./events.js";

/** Where a reader has got to; see {@link inMemoryCheckpointer} and the Node.js `fileCheckpointer`. */
export interface Checkpointer {
  /** The last contract event processed, if any. */
  getCheckpoint(): EventCheckpoint | undefined;
  /** The last block processed, if any. */
  getBlockNumber(): bigint | undefined;
  /** Records `event` as processed. */
  checkpointEvent(event: ContractEvent): Promise<void>;
  /** Records the event at `checkpoint` as processed. */
  checkpoint(checkpoint: EventCheckpoint): Promise<void>;
  /** Records block `blockNumber` as processed. */
  checkpointBlock(blockNumber: bigint): Promise<void>;
}

/** What a checkpointer stores. */
export interface CheckpointState {
  /** The last contract event processed. */
  event?: EventCheckpoint;
  /** The last block processed. */
  block?: bigint;
}

/**
 * A checkpointer that keeps its state in `state` and calls `persist` after each change
 * (the base of the in-memory and file checkpointers).
 */
export class StateCheckpointer implements Checkpointer {
  #state: CheckpointState;
  readonly #persist: (state: CheckpointState) => Promise<void>;

  /**
   * @param state - the state to start from.
   * @param persist - stores a new state; the change counts once it resolves.
   */
  constructor(state: CheckpointState, persist: (state: CheckpointState) => Promise<void>) {
    this.#state = { ...state };
    this.#persist = persist;
  }

  /** {@inheritDoc Checkpointer.getCheckpoint} */
  getCheckpoint(): EventCheckpoint | undefined {
    return this.#state.event;
  }

  /** {@inheritDoc Checkpointer.getBlockNumber} */
  getBlockNumber(): bigint | undefined {
    return this.#state.block;
  }

  /** {@inheritDoc Checkpointer.checkpointEvent} */
  async checkpointEvent(event: ContractEvent): Promise<void> {
    await this.checkpoint(event.checkpoint);
  }

  /** {@inheritDoc Checkpointer.checkpoint} */
  async checkpoint(checkpoint: EventCheckpoint): Promise<void> {
    const next = { ...this.#state, event: { seq: checkpoint.seq, index: checkpoint.index } };
    await this.#persist(next);
    this.#state = next;
  }

  /** {@inheritDoc Checkpointer.checkpointBlock} */
  async checkpointBlock(blockNumber: bigint): Promise<void> {
    const next = { ...this.#state, block: blockNumber };
    await this.#persist(next);
    this.#state = next;
  }
}

/** A checkpointer held in memory: for a process that reads on across reconnections. */
export function inMemoryCheckpointer(initial: CheckpointState = {}): Checkpointer {
  return new StateCheckpointer(initial, async () => undefined);
}

/** The JSON text of a checkpoint state (bigints as decimal strings). */
export function serializeCheckpoint(state: CheckpointState): string {
  return JSON.stringify({
    ...(state.event === undefined ? {} : { event: { seq: state.event.seq.toString(), index: state.event.index } }),
    ...(state.block === undefined ? {} : { block: state.block.toString() }),
  });
}

/** A checkpoint state from {@link serializeCheckpoint}'s text; throws on anything else. */
export function parseCheckpoint(text: string): CheckpointState {
  const value: unknown = JSON.parse(text);
  const bad = () => new TypeError(`not a checkpoint: ${text.slice(0, 200)}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad();
  const state: CheckpointState = {};
  const { event, block } = value as { event?: unknown; block?: unknown };
  if (event !== undefined) {
    const { seq, index } = (event ?? {}) as { seq?: unknown; index?: unknown };
    if (typeof seq !== "string" || !/^\d+$/.test(seq) || typeof index !== "number" || !Number.isInteger(index) || index < 0) {
      throw bad();
    }
    state.event = { seq: BigInt(seq), index };
  }
  if (block !== undefined) {
    if (typeof block !== "string" || !/^\d+$/.test(block)) throw bad();
    state.block = BigInt(block);
  }
  return state;
}
