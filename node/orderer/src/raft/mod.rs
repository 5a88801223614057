//! The ordering cluster: orderers that replicate the order through Raft (the `raft`
//! crate, etcd's Raft as TiKV runs it), so that losing a minority of them loses nothing
//! and stops nothing.
//!
//! Orderers of a cluster agree on the order through Raft: tikv's `raft` 0.7 (etcd's Raft,
//! ported; default features off, `protobuf-codec` only), driven through `RawNode`'s Ready
//! loop by Runnel's own thread, storage and transport. Chosen over `openraft` 0.9.25 by a
//! spike on this machine (3 nodes in one process, 1 KB entries, `fdatasync`, release):
//! raft p50 0.61 ms at one client and 16k entries/s at 32 clients; openraft 0.84–1.02 ms
//! and 1.7k/s, its 0.9 core waiting for each log flush before replicating. Its risks,
//! contained: rust-protobuf 2 (past its end of life; parsing hostile input recurses
//! without bound) never sees network bytes, which Runnel decodes itself (`wire.rs`); a
//! panic in the Raft thread stops that orderer with a clear error (`/healthz` 503) while
//! the others go on.
//!
//! Each committed entry holds transactions the leader admitted, with the leader's
//! timestamps, or a seal it cut; every orderer applies the committed entries in order to
//! its own stream log, so every orderer streams the same transactions at the same seqs,
//! and a peer may read from any. Seqs are positions in the committed log, never proposed
//! numbers: an entry a deposed leader proposed and no majority kept is never applied
//! anywhere. A leader that loses its leadership (a new one elected, or check-quorum
//! finding no majority in reach) answers what it had not committed with a retry at once;
//! a retried transaction that had been committed after all is `DUPLICATE_TXID`. A peer
//! asks the orderer it uses which one leads every 500 ms and moves its calls and stream
//! there; when that orderer knows no leader (cut off), it asks the others. The orderers a
//! peer reaches follow the definition in force (`RemoteOrderer::set_members`, checked
//! every second by the peer process): an added orderer is reached and a removed one left
//! without a restart, and a restarted peer starts from the definition in force
//! (`LedgerBuilder::connect`).
//!
//! Each orderer compacts its own Raft log (`raft_log_entries_kept`): at a checkpoint of
//! an applied index (what its stream held then, and the membership), the log is written
//! again from a snapshot record and the entries after it, on a thread beside the Raft
//! thread, and swapped in under the write lock. A member behind the leader's compaction
//! point gets the leader's snapshot (`OrderingSnapshot`: a seq and a block number, not
//! the data): it starts its Raft log afresh from it, reads the ordered stream up to that
//! point from the snapshot's source or another member (`Transport::deliver_from`, the
//! `Ordering` stream), checking every seal as a peer does, marks the snapshot's index
//! applied, and takes the entries after it; a crash in between finishes the catch-up at
//! the next start. The stream log is never compacted, so every orderer serves every seq
//! to peers.
//!
//! The membership follows the network configuration: every orderer follows `_config`
//! updates in its stream, and when the definition in force names other orderers than the
//! voters, the leader proposes the change (`ConfChangeV2`, joint and left implicitly; one
//! at a time; a leader that leaves hands the lead over first). Every orderer applies it
//! at the same entry, and only if it moves the voters to the orderers the definition in
//! force at that entry names (any other change is refused alike everywhere: the
//! membership stays); the transport links to new members and the `Cluster` service admits
//! them, while a removed member that still votes (until the joint membership is left)
//! stays heard. A new member starts as a non-voter from the genesis definition and
//! `cluster.json` and replays the log from entry 1; a removed one stops ordering. Entry
//! data of membership changes is decoded by prost (`wire::conf_change_from_bytes`), like
//! every message.

// Raft's message types (rust-protobuf 2) are filled in field by field, as that codec's
// own code does.
#![allow(clippy::field_reassign_with_default)]

pub mod log;
mod logger;
mod node;
pub mod quorum;
pub mod wire;

pub use node::{ClusterMember, LOG_ENTRIES_KEPT, RaftOrderer, RaftSettings, Transport};
