//! A peer's gate on the stream of a Byzantine-fault-tolerant ordering service: nothing
//! reaches the validator before the seal over it carries the signatures of a quorum of
//! the orderers the definition in force names.
//!
//! Under solo or Raft ordering a peer trusts its orderer not to lie (those services
//! tolerate crashes, not lies): it validates each transaction as it streams in, and
//! checks each seal once its transactions are in. Under BFT ordering one orderer's stream
//! proves nothing until `n - f` of them have signed the seal over it. So [`SealGate`]
//! holds each block's transactions until its seal arrives and checks the seal as the
//! validator would: the chain, the Merkle root over the held transactions' leaves, and
//! the signatures of distinct members of the definition in force at its last seq,
//! following the `_config` updates the block itself holds. Only then does it hand the
//! block on, followed by a durability mark at its end and its seal.
//!
//! A stream that differs from what the quorum signed (a transaction changed, left out,
//! added or moved, a seal forged, short of signatures or out of its chain, more unsealed
//! transactions than a block may hold) is refused: the gate drops what it held, logs the
//! orderer's endpoint and why, and asks its delivery to read again from the last block it
//! passed, from another orderer ([`Delivery::refuse`]). The validator never sees a
//! transaction no quorum signed, so one lying orderer can neither fork a peer nor stop it.
//!
//! What it costs: a transaction waits for its block's seal before stage 1 (a BFT service
//! seals every batch it decides, so that is one exchange of signatures among the
//! orderers), and each transaction is decoded once here to find `_config` updates.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::stream::SEAL_TX_BYTES_MAX;
use super::{Delivered, Delivery, OrderError, OrderedTx, SEAL_TXS_MAX};
use crate::block::{SealChain, SignedSealed};
use crate::ids::Seq;
use crate::netconfig;
use crate::seal_trust::SealTrust;
use crate::tx::Hash;
use runnel_runtime::Version;

/// Milliseconds per second: certificate checks of an update take Unix seconds.
const MS_PER_SECOND: u64 = 1_000;

/// The validator's view of a BFT service's stream (see the module doc).
pub struct SealGate {
    inner: Box<dyn Delivery>,
    /// The chain after the last block passed.
    chain: SealChain,
    /// Who may sign the seals from the chain's next seq on.
    trust: SealTrust,
    /// The transactions after the last block passed, with their leaves and bytes.
    held: Vec<OrderedTx>,
    leaves: Vec<Hash>,
    held_bytes: usize,
    /// What was checked and waits to be handed out.
    ready: VecDeque<Delivered>,
    /// Streams refused so far.
    refusals: u64,
    /// The last seq the reader holds already: checked as part of its block, never
    /// handed out again.
    delivered: Seq,
}

impl SealGate {
    /// Gates `inner`, which delivers from the seq after `chain`'s last block, whose seals
    /// `trust` says who may sign (its latest definition the one in force there). The
    /// reader holds the transactions up to `delivered` already (made durable before a
    /// restart, their seal not yet): they are checked with their block, not handed out.
    pub fn new(
        inner: Box<dyn Delivery>,
        chain: SealChain,
        trust: SealTrust,
        delivered: Seq,
    ) -> SealGate {
        SealGate {
            inner,
            chain,
            trust,
            held: Vec::new(),
            leaves: Vec::new(),
            held_bytes: 0,
            ready: VecDeque::new(),
            refusals: 0,
            delivered,
        }
    }

    /// Streams refused so far (each read again from another orderer).
    pub fn refusals(&self) -> u64 {
        self.refusals
    }

    /// Holds the next transaction of the open block, or says why the stream is refused.
    fn hold(&mut self, ordered: OrderedTx) -> Result<(), String> {
        let due = Seq(self.chain.next_first().0 + self.held.len() as u64);
        if ordered.seq != due {
            return Err(format!("transaction {} where {due} was due", ordered.seq));
        }
        let bytes = self.held_bytes.saturating_add(ordered.transaction.len());
        if self.held.len() >= SEAL_TXS_MAX || bytes > SEAL_TX_BYTES_MAX {
            return Err(format!(
                "more than a block may hold ({SEAL_TXS_MAX} transactions, {SEAL_TX_BYTES_MAX} \
                 bytes) without a seal, from seq {}",
                self.chain.next_first()
            ));
        }
        self.held_bytes = bytes;
        self.leaves.push(ordered.leaf());
        self.held.push(ordered);
        Ok(())
    }

    /// Checks `sealed` over the held transactions; when it holds, queues them, a
    /// durability mark at the block's end and the seal, and moves past the block.
    fn pass(&mut self, sealed: SignedSealed) -> Result<(), String> {
        let last = sealed.seal.last;
        // The definitions in force within the block: those its own updates put in force.
        let mut trust = self.trust.clone();
        for ordered in &self.held {
            let (from, current, msp) = trust.latest();
            let Some(current) = current else {
                break;
            };
            let version = (from != Seq::ZERO).then(|| Version::from_seq(from.0));
            let at = i64::try_from(ordered.timestamp_ms / MS_PER_SECOND).unwrap_or(i64::MAX);
            if let Some(next) =
                netconfig::valid_update(current, version, msp, &ordered.transaction, at)
            {
                trust
                    .push(ordered.seq, Arc::new(next))
                    .map_err(|e| format!("the update at seq {}: {e}", ordered.seq))?;
            }
        }
        let mut chain = self.chain.clone();
        chain
            .accept(&sealed.bytes, &self.leaves, &trust.after(last))
            .map_err(|e| format!("seal {}: {e}", sealed.seal.number.0))?;
        trust.forget_before(chain.next_first());
        self.chain = chain;
        self.trust = trust;
        self.leaves.clear();
        self.held_bytes = 0;
        let delivered = self.delivered;
        self.ready.extend(
            self.held
                .drain(..)
                .filter(|ordered| ordered.seq > delivered)
                .map(Delivered::Tx),
        );
        self.ready.push_back(Delivered::Durable(last));
        self.ready.push_back(Delivered::Seal(sealed));
        Ok(())
    }

    /// Drops what was held since the last block passed and reads again from there, from
    /// another source.
    fn refuse(&mut self, why: &str) -> Result<(), OrderError> {
        self.refusals += 1;
        tracing::warn!(
            orderer = %self.inner.source(),
            from_seq = self.chain.next_first().0,
            block = self.chain.next_number().0,
            "refused the orderer's stream: {why}; reading it again from another orderer"
        );
        self.held.clear();
        self.leaves.clear();
        self.held_bytes = 0;
        self.inner
            .refuse(self.chain.next_first(), self.chain.next_number(), why)
    }
}

impl Delivery for SealGate {
    fn next(&mut self, timeout: Duration) -> Result<Option<Delivered>, OrderError> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Ok(Some(item));
            }
            let Some(item) = self.inner.next(timeout)? else {
                return Ok(None);
            };
            let checked = match item {
                Delivered::Tx(ordered) => self.hold(ordered),
                // Durable at one orderer means nothing here: a quorum's seal does.
                Delivered::Durable(_) => Ok(()),
                Delivered::Seal(sealed) => self.pass(sealed),
            };
            if let Err(why) = checked {
                self.refuse(&why)?;
            }
        }
    }

    fn source(&self) -> String {
        self.inner.source()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use time::Duration as Validity;

    use super::*;
    use crate::block::{Seal, seal_signature, signed_by};
    use crate::identity::{
        NetworkDefinition, NetworkIdentities, OrdererNode, OrderingProtocol, Role, Signer,
    };
    use crate::ids::BlockNumber;

    const TIMESTAMP_MS: u64 = 1_800_000_000_000;

    struct Net {
        ids: NetworkIdentities,
        definition: NetworkDefinition,
    }

    /// Four orderers of Org1..Org4 ordering together (f = 1); Org5's orderer is none of
    /// them.
    fn net() -> Net {
        let orgs = ["Org1", "Org2", "Org3", "Org4", "Org5"];
        let ids = NetworkIdentities::generate(&orgs, Validity::days(3650)).unwrap();
        let mut definition = NetworkDefinition::of(&ids, "main");
        definition.ordering = OrderingProtocol::Bft;
        definition.orderers = (1..=4)
            .map(|i| OrdererNode {
                name: format!("orderer0.Org{i}"),
                org: format!("Org{i}"),
                endpoint: format!("https://127.0.0.1:{}", 7050 + i),
                raft_id: i,
                key: String::new(),
            })
            .collect();
        for orderer in &mut definition.orderers {
            let signer = ids
                .org(&orderer.org)
                .unwrap()
                .signer(Role::Orderer)
                .unwrap();
            orderer.key = hex::encode(signer.public_key());
        }
        Net { ids, definition }
    }

    impl Net {
        fn orderer(&self, org: &str) -> Signer {
            self.ids.org(org).unwrap().signer(Role::Orderer).unwrap()
        }

        fn trust(&self) -> SealTrust {
            SealTrust::of(Seq::ZERO, Arc::new(self.definition.clone())).unwrap()
        }

        /// `blocks` blocks of `per_block` transactions, each sealed by `signers`, with an
        /// orderer's durability mark between: the stream a source delivers.
        fn stream(&self, blocks: u64, per_block: u64, signers: &[&str]) -> Vec<Delivered> {
            let mut items = Vec::new();
            let mut chain = SealChain::genesis();
            let mut seq = 0;
            for _ in 0..blocks {
                let first = Seq(seq + 1);
                let mut leaves = Vec::new();
                for _ in 0..per_block {
                    seq += 1;
                    let ordered = OrderedTx {
                        seq: Seq(seq),
                        timestamp_ms: TIMESTAMP_MS + seq,
                        transaction: format!("transaction {seq}").into_bytes(),
                    };
                    leaves.push(ordered.leaf());
                    items.push(Delivered::Tx(ordered));
                }
                items.push(Delivered::Durable(Seq(seq)));
                let seal = Seal::new(
                    chain.next_number(),
                    first,
                    &leaves,
                    chain.previous_hash(),
                    TIMESTAMP_MS + seq,
                );
                let hash = crate::tx::sha256(&seal.encode());
                let signatures = signers
                    .iter()
                    .map(|org| seal_signature(&self.orderer(org), &hash))
                    .collect();
                let sealed = signed_by(seal, signatures);
                chain = SealChain::after(&sealed);
                items.push(Delivered::Seal(sealed));
            }
            items
        }
    }

    /// Sources read in turn: each refusal moves to the next, from the position refused.
    struct Sources {
        sources: Vec<VecDeque<Delivered>>,
        current: usize,
        refused: Arc<Mutex<Vec<(Seq, BlockNumber)>>>,
    }

    impl Delivery for Sources {
        fn next(&mut self, _timeout: Duration) -> Result<Option<Delivered>, OrderError> {
            Ok(self.sources[self.current].pop_front())
        }

        fn refuse(
            &mut self,
            from: Seq,
            next_block: BlockNumber,
            why: &str,
        ) -> Result<(), OrderError> {
            self.refused.lock().unwrap().push((from, next_block));
            self.current += 1;
            let Some(next) = self.sources.get_mut(self.current) else {
                return Err(OrderError::Corrupt(why.to_string()));
            };
            next.retain(|item| match item {
                Delivered::Tx(ordered) => ordered.seq >= from,
                Delivered::Durable(_) => true,
                Delivered::Seal(sealed) => sealed.seal.number >= next_block,
            });
            Ok(())
        }
    }

    /// Everything a gate passed, how its reading ended, and the positions it refused.
    type Run = (
        Vec<Delivered>,
        Result<(), OrderError>,
        Vec<(Seq, BlockNumber)>,
    );

    /// The gate over `sources`, read to their end.
    fn run(net: &Net, sources: Vec<Vec<Delivered>>) -> Run {
        let refused = Arc::new(Mutex::new(Vec::new()));
        let inner = Sources {
            sources: sources.into_iter().map(VecDeque::from).collect(),
            current: 0,
            refused: refused.clone(),
        };
        let mut gate = SealGate::new(
            Box::new(inner),
            SealChain::genesis(),
            net.trust(),
            Seq::ZERO,
        );
        let mut passed = Vec::new();
        let end = loop {
            match gate.next(Duration::ZERO) {
                Ok(Some(item)) => passed.push(item),
                Ok(None) => break Ok(()),
                Err(error) => break Err(error),
            }
        };
        assert_eq!(gate.refusals() as usize, refused.lock().unwrap().len());
        let refused = refused.lock().unwrap().clone();
        (passed, end, refused)
    }

    /// What the gate passes of an honest stream: each block's transactions, a durability
    /// mark at its end (the orderer's own marks dropped), its seal.
    fn passed_of(stream: &[Delivered]) -> Vec<Delivered> {
        let mut passed = Vec::new();
        for item in stream {
            match item {
                Delivered::Tx(_) => passed.push(item.clone()),
                Delivered::Durable(_) => {}
                Delivered::Seal(sealed) => {
                    passed.push(Delivered::Durable(sealed.seal.last));
                    passed.push(item.clone());
                }
            }
        }
        passed
    }

    #[test]
    fn blocks_a_quorum_signed_pass_and_nothing_before_its_seal() {
        let net = net();
        let honest = net.stream(3, 4, &["Org1", "Org2", "Org3"]);
        let (passed, end, refused) = run(&net, vec![honest.clone()]);
        end.unwrap();
        assert!(refused.is_empty());
        assert_eq!(passed, passed_of(&honest));

        // A block whose seal never comes is never passed, however long it waits.
        let unsealed: Vec<Delivered> = honest[..honest.len() - 1].to_vec();
        let (passed, end, _) = run(&net, vec![unsealed]);
        end.unwrap();
        assert_eq!(passed, passed_of(&honest[..honest.len() - 6]));
    }

    #[test]
    fn a_stream_that_differs_from_what_a_quorum_signed_is_read_again_from_another_orderer() {
        let net = net();
        let honest = net.stream(3, 4, &["Org2", "Org3", "Org4"]);
        // Block 2 (seqs 5..=8, items 6..12) as a lying orderer might send it.
        let changed = |f: &dyn Fn(&mut Vec<Delivered>)| {
            let mut lie = honest.clone();
            f(&mut lie);
            lie
        };
        let lies = [
            // One transaction's bytes changed.
            changed(&|s| {
                if let Delivered::Tx(ordered) = &mut s[7] {
                    ordered.transaction = b"front-run".to_vec();
                }
            }),
            // One transaction's timestamp changed.
            changed(&|s| {
                if let Delivered::Tx(ordered) = &mut s[7] {
                    ordered.timestamp_ms += 1;
                }
            }),
            // One left out (the next takes its seq).
            changed(&|s| {
                s.remove(7);
                for item in &mut s[7..10] {
                    if let Delivered::Tx(ordered) = item {
                        ordered.seq = Seq(ordered.seq.0 - 1);
                    }
                }
            }),
            // Two swapped.
            changed(&|s| {
                let (Delivered::Tx(a), Delivered::Tx(b)) = (s[6].clone(), s[7].clone()) else {
                    unreachable!()
                };
                s[6] = Delivered::Tx(OrderedTx { seq: a.seq, ..b });
                s[7] = Delivered::Tx(OrderedTx { seq: b.seq, ..a });
            }),
            // One added past the block.
            changed(&|s| {
                s.insert(
                    10,
                    Delivered::Tx(OrderedTx {
                        seq: Seq(9),
                        timestamp_ms: TIMESTAMP_MS,
                        transaction: b"extra".to_vec(),
                    }),
                );
            }),
        ];
        for (i, lie) in lies.into_iter().enumerate() {
            let (passed, end, refused) = run(&net, vec![lie, honest.clone()]);
            end.unwrap_or_else(|e| panic!("lie {i}: {e}"));
            assert_eq!(refused, [(Seq(5), BlockNumber(2))], "lie {i}");
            assert_eq!(passed, passed_of(&honest), "lie {i}");
        }
    }

    #[test]
    fn seals_short_of_a_quorum_forged_or_signed_by_outsiders_are_refused() {
        let net = net();
        let honest = net.stream(2, 2, &["Org1", "Org3", "Org4"]);
        let two = net.stream(2, 2, &["Org1", "Org3"]);
        let outsider = net.stream(2, 2, &["Org1", "Org3", "Org5"]);
        let twice = net.stream(2, 2, &["Org1", "Org3", "Org3"]);
        let mut forged = honest.clone();
        if let Some(Delivered::Seal(sealed)) = forged.last_mut() {
            let mut signed =
                <crate::proto::SignedSeal as prost::Message>::decode(sealed.bytes.as_slice())
                    .unwrap();
            signed.signatures[2].signature[5] ^= 1;
            sealed.bytes = prost::Message::encode_to_vec(&signed);
        }
        for (name, lie, from) in [
            ("two signatures", two, (Seq(1), BlockNumber(1))),
            ("an outsider's", outsider, (Seq(1), BlockNumber(1))),
            ("one orderer twice", twice, (Seq(1), BlockNumber(1))),
            ("a forged signature", forged, (Seq(3), BlockNumber(2))),
        ] {
            let (passed, end, refused) = run(&net, vec![lie, honest.clone()]);
            end.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(refused, [from], "{name}");
            assert_eq!(passed, passed_of(&honest), "{name}");
        }
    }

    #[test]
    fn an_orderer_streaming_without_seals_is_refused_before_memory_runs_out() {
        let net = net();
        let honest = net.stream(1, 3, &["Org1", "Org2", "Org3"]);
        let flood: Vec<Delivered> = (1..=SEAL_TXS_MAX as u64 + 5)
            .map(|seq| {
                Delivered::Tx(OrderedTx {
                    seq: Seq(seq),
                    timestamp_ms: TIMESTAMP_MS,
                    transaction: vec![0; 8],
                })
            })
            .collect();
        let (passed, end, refused) = run(&net, vec![flood, honest.clone()]);
        end.unwrap();
        assert_eq!(refused, [(Seq(1), BlockNumber(1))]);
        assert_eq!(passed, passed_of(&honest));
    }

    #[test]
    fn after_a_restart_the_transactions_held_already_are_checked_with_their_block_not_passed() {
        let net = net();
        let honest = net.stream(2, 4, &["Org1", "Org2", "Org4"]);
        // Block 1 committed with its seal; seqs 5 and 6 of block 2 made durable before the
        // restart, its seal not yet.
        let Delivered::Seal(first) = &honest[5] else {
            unreachable!()
        };
        let rest: Vec<Delivered> = honest[6..].to_vec();
        let mut gate = SealGate::new(
            Box::new(Sources {
                sources: vec![VecDeque::from(rest.clone())],
                current: 0,
                refused: Arc::default(),
            }),
            SealChain::after(first),
            net.trust(),
            Seq(6),
        );
        let mut passed = Vec::new();
        while let Some(item) = gate.next(Duration::ZERO).unwrap() {
            passed.push(item);
        }
        let expected: Vec<Delivered> = passed_of(&rest)
            .into_iter()
            .filter(|item| !matches!(item, Delivered::Tx(ordered) if ordered.seq <= Seq(6)))
            .collect();
        assert_eq!(passed, expected);
        assert!(matches!(&passed[0], Delivered::Tx(ordered) if ordered.seq == Seq(7)));
    }

    #[test]
    fn with_no_other_orderer_left_the_refusal_is_an_error() {
        let net = net();
        let two = net.stream(1, 2, &["Org1", "Org2"]);
        let (passed, end, refused) = run(&net, vec![two]);
        assert!(passed.is_empty());
        assert_eq!(refused.len(), 1);
        let error = end.unwrap_err();
        assert!(error.to_string().contains("signatures"), "{error}");
    }
}
