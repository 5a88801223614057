//! The shape every read/write set must have before stage 2 compares it with the state:
//! what the store can hold and what a re-check can cost. A transaction that breaks a
//! rule is `BAD_RWSET`, decided from its bytes alone, so every peer decides the same;
//! nothing a transaction carries can make staging fail and stop the validator.
//!
//! The limits are the network's, not a node's: a peer with other limits would give
//! other validation codes. They sit far above what the runtime lets one call produce
//! (`runnel_runtime::Limits`), so only a hand-made read/write set meets them.

use std::collections::HashSet;

use prost::Message;

use crate::ids::ValidationCode;
use crate::proto::{ContractEvent, NsRwSet, RangeRead, ResponsePayload};
use crate::store::{check_key, check_namespace};

/// Most namespaces one transaction's read/write sets name.
pub const TX_NAMESPACES_MAX: usize = 16;
/// Most point reads in one transaction, over all its namespaces.
pub const TX_READS_MAX: usize = 1 << 16;
/// Most writes and deletes in one transaction, over all its namespaces.
pub const TX_WRITES_MAX: usize = 1 << 16;
/// Most range reads in one transaction.
pub const TX_RANGE_READS_MAX: usize = 1024;
/// Most keys recorded by all of one transaction's range reads together.
pub const TX_RANGE_KEYS_MAX: usize = 1 << 16;
/// Most contract events in one transaction.
pub const TX_EVENTS_MAX: usize = 1024;

/// The rules of this module applied to a transaction's response payload as it carries it
/// (the encoded `ResponsePayload` its endorsers signed): `BAD_PAYLOAD` when the bytes do
/// not decode, as stage 1 decides; `BAD_RWSET` when its read/write sets or events break a
/// rule, as stage 2 decides; `Ok` otherwise. For tools and fuzzing: the validator checks
/// the payload it has already decoded. A payload this passes can be staged and committed
/// whatever the state.
pub fn check_rwset(payload: &[u8]) -> Result<(), ValidationCode> {
    let payload = ResponsePayload::decode(payload).map_err(|_| ValidationCode::BadPayload)?;
    check(&payload.rwsets, &payload.events)
}

/// `Ok` when `rwsets` and `events` keep every rule; else the code that says they do not.
pub(crate) fn check(rwsets: &[NsRwSet], events: &[ContractEvent]) -> Result<(), ValidationCode> {
    let bad = Err(ValidationCode::BadRwset);
    if rwsets.len() > TX_NAMESPACES_MAX || events.len() > TX_EVENTS_MAX {
        return bad;
    }
    let (mut reads, mut writes, mut ranges, mut range_keys) = (0, 0, 0, 0);
    let mut namespaces = HashSet::with_capacity(rwsets.len());
    for set in rwsets {
        if check_namespace(&set.namespace).is_err() || !namespaces.insert(&set.namespace) {
            return bad;
        }
        reads += set.reads.len();
        writes += set.writes.len();
        ranges += set.range_reads.len();
        range_keys += set.range_reads.iter().map(|r| r.reads.len()).sum::<usize>();
        if reads > TX_READS_MAX
            || writes > TX_WRITES_MAX
            || ranges > TX_RANGE_READS_MAX
            || range_keys > TX_RANGE_KEYS_MAX
        {
            return bad;
        }
        let keys_ok = set.reads.iter().all(|r| check_key(&r.key).is_ok())
            && set.writes.iter().all(|w| check_key(&w.key).is_ok())
            && set.range_reads.iter().all(range_ok);
        if !keys_ok {
            return bad;
        }
    }
    Ok(())
}

/// A range read as the runtime records one: keys the store allows, a non-empty end when
/// there is one, its reads strictly ascending inside [start, end), and its last key
/// yielded, if any, inside the range and not before the last read.
fn range_ok(range: &RangeRead) -> bool {
    let end = range.end.as_deref();
    let inside = |key: &[u8]| key >= range.start.as_slice() && end.is_none_or(|end| key < end);
    if check_key(&range.start).is_err()
        || end.is_some_and(|end| end.is_empty() || check_key(end).is_err())
    {
        return false;
    }
    let ascending = range.reads.windows(2).all(|w| w[0].key < w[1].key);
    let reads_inside = range.reads.iter().all(|read| inside(&read.key));
    let last_ok = match (&range.last, range.reads.last()) {
        (Some(last), read) => {
            inside(last) && read.is_none_or(|read| read.key.as_slice() <= last.as_slice())
        }
        // Nothing yielded: nothing read either, unless the range ran to its end (every
        // key it met was deleted by the call itself).
        (None, read) => read.is_none() || range.exhausted,
    };
    ascending && reads_inside && last_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{KvRead, KvWrite, Version};
    use crate::store::KEY_BYTES_MAX;

    fn read(key: &[u8]) -> KvRead {
        KvRead {
            key: key.to_vec(),
            version: Some(Version { seq: 1 }),
        }
    }

    fn set(ns: &str) -> NsRwSet {
        NsRwSet {
            namespace: ns.into(),
            ..NsRwSet::default()
        }
    }

    fn range(start: &[u8], end: Option<&[u8]>, keys: &[&[u8]], last: Option<&[u8]>) -> RangeRead {
        RangeRead {
            start: start.to_vec(),
            end: end.map(<[u8]>::to_vec),
            exhausted: false,
            reads: keys.iter().map(|k| read(k)).collect(),
            last: last.map(<[u8]>::to_vec),
        }
    }

    fn with_range(r: RangeRead) -> Result<(), ValidationCode> {
        let mut s = set("kv");
        s.range_reads.push(r);
        check(&[s], &[])
    }

    #[test]
    fn a_key_the_store_cannot_hold_is_bad_rwset_not_an_error() {
        let mut s = set("kv");
        s.writes.push(KvWrite {
            key: vec![b'k'; KEY_BYTES_MAX + 1],
            ..KvWrite::default()
        });
        assert_eq!(check(&[s.clone()], &[]), Err(ValidationCode::BadRwset));
        s.writes[0].key.pop();
        assert_eq!(check(&[s], &[]), Ok(()));
    }

    #[test]
    fn bad_namespaces_and_repeated_namespaces_are_refused() {
        for ns in ["", "a\0b", &"n".repeat(256)] {
            assert_eq!(
                check(&[set(ns)], &[]),
                Err(ValidationCode::BadRwset),
                "{ns:?}"
            );
        }
        assert_eq!(
            check(&[set("kv"), set("kv")], &[]),
            Err(ValidationCode::BadRwset)
        );
        let many: Vec<NsRwSet> = (0..=TX_NAMESPACES_MAX)
            .map(|i| set(&format!("n{i}")))
            .collect();
        assert_eq!(check(&many, &[]), Err(ValidationCode::BadRwset));
    }

    #[test]
    fn counts_over_the_limits_are_refused() {
        let mut s = set("kv");
        s.writes = vec![KvWrite::default(); TX_WRITES_MAX + 1];
        assert_eq!(check(&[s], &[]), Err(ValidationCode::BadRwset));
        let mut s = set("kv");
        s.reads = vec![read(b"k"); TX_READS_MAX + 1];
        assert_eq!(check(&[s], &[]), Err(ValidationCode::BadRwset));
        let events = vec![ContractEvent::default(); TX_EVENTS_MAX + 1];
        assert_eq!(check(&[], &events), Err(ValidationCode::BadRwset));
    }

    #[test]
    fn range_reads_must_be_shaped_as_the_runtime_records_them() {
        let ok = |r| assert_eq!(with_range(r), Ok(()));
        let bad = |r| assert_eq!(with_range(r), Err(ValidationCode::BadRwset));
        ok(range(b"a", Some(b"z"), &[b"b", b"c"], Some(b"c")));
        ok(range(b"a", Some(b"z"), &[b"b"], Some(b"m")));
        ok(range(b"a", None, &[], None));
        bad(range(b"a", Some(b""), &[], None));
        bad(range(b"a", Some(b"z"), &[b"c", b"b"], Some(b"c")));
        bad(range(b"a", Some(b"z"), &[b"b", b"b"], Some(b"b")));
        bad(range(b"b", Some(b"z"), &[b"a"], Some(b"a")));
        bad(range(b"a", Some(b"m"), &[b"n"], Some(b"n")));
        bad(range(b"a", Some(b"z"), &[b"c"], Some(b"b")));
        bad(range(b"a", Some(b"z"), &[b"c"], None));
        let mut exhausted = range(b"a", Some(b"z"), &[b"c"], None);
        exhausted.exhausted = true;
        ok(exhausted);
    }
}
