//! Raft's messages on the wire between orderers, in Runnel's own codec.
//!
//! The `raft` crate's message types are rust-protobuf 2's, a codec past its end of life
//! whose parser recurses without bound on hostile input. Runnel never hands it bytes from
//! the network: messages travel as `RaftMessage` (cluster.proto, the same fields and
//! numbers), decoded by prost with its recursion and size limits, and are converted field
//! by field here. Everything that comes from another orderer is checked on the way in:
//! an unknown message or entry type is refused, not guessed.

use prost::Message as _;
use prost::bytes::Bytes;
use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, ConfState, Entry,
    EntryType, Message, MessageType, Snapshot, SnapshotMetadata,
};

use runnel_ledger::proto::{
    RaftConfChangeV2, RaftConfState, RaftEntry, RaftMessage, RaftSnapshot, RaftSnapshotMetadata,
};

/// Why a message from another orderer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A message type Raft does not have.
    #[error("unknown Raft message type {0}")]
    MessageType(i32),
    /// An entry type Raft does not have.
    #[error("unknown Raft entry type {0}")]
    EntryType(i32),
    /// A message type that only ever travels inside one node (a local tick or proposal).
    #[error("Raft message type {0:?} is local to a node and never sent between orderers")]
    Local(MessageType),
    /// A membership change that does not decode, or names an unknown kind of change.
    #[error("a malformed membership change: {0}")]
    ConfChange(String),
}

/// Most changes one membership change may make: a cluster has a handful of members.
pub const CONF_CHANGES_MAX: usize = 64;

/// A membership change from an entry's data (Raft encodes it; Runnel decodes it), refused
/// if it does not decode or names an unknown transition or kind of change.
pub fn conf_change_from_bytes(data: &[u8]) -> Result<ConfChangeV2, WireError> {
    let wire = RaftConfChangeV2::decode(data).map_err(|e| WireError::ConfChange(e.to_string()))?;
    if wire.changes.len() > CONF_CHANGES_MAX {
        return Err(WireError::ConfChange(format!(
            "{} changes; at most {CONF_CHANGES_MAX}",
            wire.changes.len()
        )));
    }
    let mut change = ConfChangeV2::default();
    change.set_transition(match wire.transition {
        0 => ConfChangeTransition::Auto,
        1 => ConfChangeTransition::Implicit,
        2 => ConfChangeTransition::Explicit,
        other => return Err(WireError::ConfChange(format!("unknown transition {other}"))),
    });
    let mut changes = Vec::with_capacity(wire.changes.len());
    for single in wire.changes {
        let mut one = ConfChangeSingle::default();
        one.node_id = single.node_id;
        one.set_change_type(match single.change_type {
            0 => ConfChangeType::AddNode,
            1 => ConfChangeType::RemoveNode,
            2 => ConfChangeType::AddLearnerNode,
            other => {
                return Err(WireError::ConfChange(format!(
                    "unknown change type {other}"
                )));
            }
        });
        changes.push(one);
    }
    change.set_changes(changes.into());
    change.context = Bytes::from(wire.context);
    Ok(change)
}

/// A message as it goes on the wire.
pub fn to_wire(message: &Message) -> RaftMessage {
    RaftMessage {
        msg_type: message.get_msg_type() as i32,
        to: message.to,
        from: message.from,
        term: message.term,
        log_term: message.log_term,
        index: message.index,
        entries: message.entries.iter().map(entry_to_wire).collect(),
        commit: message.commit,
        snapshot: message.snapshot.as_ref().map(snapshot_to_wire),
        reject: message.reject,
        reject_hint: message.reject_hint,
        context: message.context.to_vec(),
        request_snapshot: message.request_snapshot,
        deprecated_priority: message.deprecated_priority,
        commit_term: message.commit_term,
        priority: message.priority,
    }
}

/// A message from the wire, refused if it is no message one Raft node sends another.
pub fn from_wire(wire: RaftMessage) -> Result<Message, WireError> {
    let msg_type = message_type(wire.msg_type)?;
    if matches!(
        msg_type,
        MessageType::MsgHup
            | MessageType::MsgBeat
            | MessageType::MsgPropose
            | MessageType::MsgUnreachable
            | MessageType::MsgSnapStatus
            | MessageType::MsgCheckQuorum
    ) {
        return Err(WireError::Local(msg_type));
    }
    let mut message = Message::default();
    message.set_msg_type(msg_type);
    message.to = wire.to;
    message.from = wire.from;
    message.term = wire.term;
    message.log_term = wire.log_term;
    message.index = wire.index;
    message.entries = wire
        .entries
        .into_iter()
        .map(entry_from_wire)
        .collect::<Result<Vec<_>, _>>()?
        .into();
    message.commit = wire.commit;
    if let Some(snapshot) = wire.snapshot {
        message.set_snapshot(snapshot_from_wire(snapshot));
    }
    message.reject = wire.reject;
    message.reject_hint = wire.reject_hint;
    message.context = Bytes::from(wire.context);
    message.request_snapshot = wire.request_snapshot;
    message.deprecated_priority = wire.deprecated_priority;
    message.commit_term = wire.commit_term;
    message.priority = wire.priority;
    Ok(message)
}

fn message_type(value: i32) -> Result<MessageType, WireError> {
    use MessageType::*;
    Ok(match value {
        0 => MsgHup,
        1 => MsgBeat,
        2 => MsgPropose,
        3 => MsgAppend,
        4 => MsgAppendResponse,
        5 => MsgRequestVote,
        6 => MsgRequestVoteResponse,
        7 => MsgSnapshot,
        8 => MsgHeartbeat,
        9 => MsgHeartbeatResponse,
        10 => MsgUnreachable,
        11 => MsgSnapStatus,
        12 => MsgCheckQuorum,
        13 => MsgTransferLeader,
        14 => MsgTimeoutNow,
        15 => MsgReadIndex,
        16 => MsgReadIndexResp,
        17 => MsgRequestPreVote,
        18 => MsgRequestPreVoteResponse,
        other => return Err(WireError::MessageType(other)),
    })
}

/// An entry type from its number.
pub fn entry_type(value: i32) -> Result<EntryType, WireError> {
    match value {
        0 => Ok(EntryType::EntryNormal),
        1 => Ok(EntryType::EntryConfChange),
        2 => Ok(EntryType::EntryConfChangeV2),
        other => Err(WireError::EntryType(other)),
    }
}

fn entry_to_wire(entry: &Entry) -> RaftEntry {
    RaftEntry {
        entry_type: entry.get_entry_type() as i32,
        term: entry.term,
        index: entry.index,
        data: entry.data.clone(),
        sync_log: entry.sync_log,
        context: entry.context.to_vec(),
    }
}

fn entry_from_wire(wire: RaftEntry) -> Result<Entry, WireError> {
    let mut entry = Entry::default();
    entry.set_entry_type(entry_type(wire.entry_type)?);
    entry.term = wire.term;
    entry.index = wire.index;
    entry.data = wire.data;
    entry.sync_log = wire.sync_log;
    entry.context = Bytes::from(wire.context);
    Ok(entry)
}

fn snapshot_to_wire(snapshot: &Snapshot) -> RaftSnapshot {
    let metadata = snapshot.get_metadata();
    RaftSnapshot {
        data: snapshot.data.clone(),
        metadata: Some(RaftSnapshotMetadata {
            conf_state: Some(conf_state_to_wire(metadata.get_conf_state())),
            index: metadata.index,
            term: metadata.term,
        }),
    }
}

fn snapshot_from_wire(wire: RaftSnapshot) -> Snapshot {
    let mut snapshot = Snapshot::default();
    snapshot.data = wire.data;
    if let Some(metadata) = wire.metadata {
        let mut meta = SnapshotMetadata::default();
        meta.index = metadata.index;
        meta.term = metadata.term;
        if let Some(conf_state) = metadata.conf_state {
            meta.set_conf_state(conf_state_from_wire(conf_state));
        }
        snapshot.set_metadata(meta);
    }
    snapshot
}

/// A membership as Runnel stores and sends it.
pub fn conf_state_to_wire(conf_state: &ConfState) -> RaftConfState {
    RaftConfState {
        voters: conf_state.voters.clone(),
        learners: conf_state.learners.clone(),
        voters_outgoing: conf_state.voters_outgoing.clone(),
        learners_next: conf_state.learners_next.clone(),
        auto_leave: conf_state.auto_leave,
    }
}

/// A membership from its stored or sent form.
pub fn conf_state_from_wire(wire: RaftConfState) -> ConfState {
    let mut conf_state = ConfState::default();
    conf_state.voters = wire.voters;
    conf_state.learners = wire.learners;
    conf_state.voters_outgoing = wire.voters_outgoing;
    conf_state.learners_next = wire.learners_next;
    conf_state.auto_leave = wire.auto_leave;
    conf_state
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    fn append() -> Message {
        let mut message = Message::default();
        message.set_msg_type(MessageType::MsgAppend);
        message.to = 2;
        message.from = 1;
        message.term = 7;
        message.log_term = 6;
        message.index = 41;
        message.commit = 40;
        message.commit_term = 6;
        let mut entry = Entry::default();
        entry.term = 7;
        entry.index = 42;
        entry.data = Bytes::from_static(b"transactions");
        entry.context = Bytes::from_static(b"ctx");
        let mut change = Entry::default();
        change.set_entry_type(EntryType::EntryConfChangeV2);
        change.term = 7;
        change.index = 43;
        message.entries = vec![entry, change].into();
        message
    }

    #[test]
    fn a_message_crosses_the_wire_unchanged() {
        let mut with_snapshot = append();
        let mut snapshot = Snapshot::default();
        snapshot.data = Bytes::from_static(b"state");
        let mut meta = SnapshotMetadata::default();
        meta.index = 40;
        meta.term = 6;
        let mut conf = ConfState::default();
        conf.voters = vec![1, 2, 3];
        conf.voters_outgoing = vec![1, 2];
        conf.auto_leave = true;
        meta.set_conf_state(conf);
        snapshot.set_metadata(meta);
        with_snapshot.set_snapshot(snapshot);
        with_snapshot.set_msg_type(MessageType::MsgSnapshot);
        for message in [append(), with_snapshot] {
            let bytes = to_wire(&message).encode_to_vec();
            let back = from_wire(RaftMessage::decode(bytes.as_slice()).unwrap()).unwrap();
            assert_eq!(back, message);
        }
    }

    #[test]
    fn the_wire_form_is_raft_s_own_encoding() {
        // Same field numbers: what Runnel sends is what raft's own codec would read.
        use protobuf::Message as _;
        let message = append();
        let ours = to_wire(&message).encode_to_vec();
        let theirs = message.write_to_bytes().unwrap();
        assert_eq!(
            Message::parse_from_bytes(&ours).unwrap(),
            Message::parse_from_bytes(&theirs).unwrap()
        );
    }

    #[test]
    fn unknown_and_local_types_are_refused() {
        let mut wire = to_wire(&append());
        wire.msg_type = 99;
        assert_eq!(from_wire(wire), Err(WireError::MessageType(99)));
        let mut wire = to_wire(&append());
        wire.entries[0].entry_type = 7;
        assert_eq!(from_wire(wire), Err(WireError::EntryType(7)));
        let mut wire = to_wire(&append());
        wire.msg_type = MessageType::MsgPropose as i32;
        assert_eq!(
            from_wire(wire),
            Err(WireError::Local(MessageType::MsgPropose))
        );
    }

    fn single(id: u64, change_type: ConfChangeType) -> ConfChangeSingle {
        let mut single = ConfChangeSingle::default();
        single.node_id = id;
        single.set_change_type(change_type);
        single
    }

    #[test]
    fn a_membership_change_raft_encodes_decodes_the_same_and_a_bad_one_is_refused() {
        use protobuf::Message as _;
        let mut change = ConfChangeV2::default();
        change.set_transition(ConfChangeTransition::Implicit);
        change.set_changes(
            vec![
                single(4, ConfChangeType::AddNode),
                single(1, ConfChangeType::RemoveNode),
            ]
            .into(),
        );
        let bytes = change.write_to_bytes().unwrap();
        assert_eq!(conf_change_from_bytes(&bytes).unwrap(), change);
        // Raft's own entry to leave a joint membership: no data at all.
        assert_eq!(
            conf_change_from_bytes(&[]).unwrap(),
            ConfChangeV2::default()
        );

        let mut wire = RaftConfChangeV2::decode(bytes.as_slice()).unwrap();
        wire.changes[0].change_type = 9;
        let error = conf_change_from_bytes(&wire.encode_to_vec()).unwrap_err();
        assert!(matches!(error, WireError::ConfChange(_)), "{error:?}");
        wire.changes[0].change_type = 0;
        wire.transition = 5;
        let error = conf_change_from_bytes(&wire.encode_to_vec()).unwrap_err();
        assert!(matches!(error, WireError::ConfChange(_)), "{error:?}");
        assert!(conf_change_from_bytes(b"\xff\xff").is_err());
    }
}
