//! Who may sign each seal of the stream: the orderers the network definition in force
//! names, seq by seq.
//!
//! A configuration update at seq `s` (`_config`, see [`crate::netconfig`]) changes the
//! ordering service's members from the transaction after it. A seal over seqs
//! `first..=last` is checked against the definition in force once `last` is applied:
//! the membership as it stands when the block closes. So an orderer removed at `s`
//! cannot sign a block that holds `s` or anything after it, and an orderer added at `s`
//! may sign the block that holds `s`. The rule is a function of the stream alone, so
//! every peer and every orderer of the cluster accept and refuse the same seals,
//! whenever they check them.
//!
//! Why the end of the block and not its start: a cluster moves to the membership the
//! latest definition names, and its leader is one of those members. Were a seal checked
//! against the definition in force at its first seq, a block open across an update that
//! replaced every orderer could be signed by none of the orderers still running, and
//! no seal would ever be cut again.
//!
//! Each definition's trust (its CAs, its revoked certificates) comes with it: a seal is
//! checked through the MSP of the definition that applies to it, never through the one
//! a peer's validation has reached by the time it checks the seal.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::block::Sealers;
use crate::identity::{IdentityError, Msp, NetworkDefinition};
use crate::ids::Seq;

/// One definition's orderers, with the MSP that checks their certificates.
#[derive(Debug, Clone)]
struct Trust {
    /// `None` for a ledger given no network definition: any orderer of `msp`.
    definition: Option<Arc<NetworkDefinition>>,
    msp: Arc<Msp>,
}

impl Trust {
    fn of(definition: Arc<NetworkDefinition>) -> Result<Trust, IdentityError> {
        let msp = Arc::new(definition.msp()?);
        Ok(Trust {
            definition: Some(definition),
            msp,
        })
    }

    fn sealers(&self) -> Sealers<'_> {
        match &self.definition {
            Some(definition) => Sealers::of(definition, &self.msp),
            None => Sealers::any_orderer(&self.msp),
        }
    }
}

/// The definitions in force from some seq on, each from the seq of the update that put
/// it in force, oldest first: what [`SealTrust::after`] answers from.
#[derive(Debug, Clone)]
pub struct SealTrust {
    /// Never empty; the first applies up to the second's seq.
    entries: VecDeque<(Seq, Trust)>,
}

impl SealTrust {
    /// `definition` in force after seq `from` ([`Seq::ZERO`] for the genesis one).
    pub fn of(from: Seq, definition: Arc<NetworkDefinition>) -> Result<SealTrust, IdentityError> {
        Ok(SealTrust {
            entries: VecDeque::from([(from, Trust::of(definition)?)]),
        })
    }

    /// Who may sign the seals from `first` on, from `genesis` and `updates` (each update's
    /// seq and definition, oldest first): what [`SealTrust::forget_before`]`(first)` would
    /// keep, the definition in force once `first` is applied and every later update. The
    /// MSP of a definition no such seal needs is never built.
    pub fn since(
        first: Seq,
        genesis: &NetworkDefinition,
        updates: &[(Seq, NetworkDefinition)],
    ) -> Result<SealTrust, IdentityError> {
        let later = updates.partition_point(|(seq, _)| *seq <= first);
        let (from, base) = match later.checked_sub(1) {
            Some(i) => (updates[i].0, &updates[i].1),
            None => (Seq::ZERO, genesis),
        };
        let mut trust = SealTrust::of(from, Arc::new(base.clone()))?;
        for (seq, definition) in &updates[later..] {
            trust.push(*seq, Arc::new(definition.clone()))?;
        }
        Ok(trust)
    }

    /// For a ledger given no network definition: any orderer `msp` trusts, throughout.
    pub fn any_orderer(msp: Arc<Msp>) -> SealTrust {
        SealTrust {
            entries: VecDeque::from([(
                Seq::ZERO,
                Trust {
                    definition: None,
                    msp,
                },
            )]),
        }
    }

    /// The update at seq `seq` (past every one pushed before) put `definition` in force.
    pub fn push(
        &mut self,
        seq: Seq,
        definition: Arc<NetworkDefinition>,
    ) -> Result<(), IdentityError> {
        debug_assert!(self.entries.back().is_none_or(|(last, _)| *last < seq));
        self.entries.push_back((seq, Trust::of(definition)?));
        Ok(())
    }

    /// Who may sign a seal whose last seq is `last`: the orderers of the definition in
    /// force once `last` is applied.
    pub fn after(&self, last: Seq) -> Sealers<'_> {
        self.entries
            .iter()
            .rev()
            .find(|(from, _)| *from <= last)
            .or(self.entries.front())
            .map(|(_, trust)| trust.sealers())
            .expect("a seal trust holds at least one definition")
    }

    /// The seqs of the updates after `first` and up to `last`, each with who may sign a
    /// seal that ends at or after it (until the next): for a sealer choosing where its
    /// block may end.
    pub fn updates_within(
        &self,
        first: Seq,
        last: Seq,
    ) -> impl Iterator<Item = (Seq, Sealers<'_>)> {
        self.entries
            .iter()
            .filter(move |(from, _)| *from >= first && *from <= last)
            .map(|(from, trust)| (*from, trust.sealers()))
    }

    /// The latest definition it holds (`None` for [`SealTrust::any_orderer`]), the seq of
    /// the update that put it in force ([`Seq::ZERO`] for the first one it was given)
    /// and the MSP that checks what it says.
    pub fn latest(&self) -> (Seq, Option<&Arc<NetworkDefinition>>, &Arc<Msp>) {
        let (seq, trust) = self
            .entries
            .back()
            .expect("a seal trust holds at least one definition");
        (*seq, trust.definition.as_ref(), &trust.msp)
    }

    /// Forgets the definitions no seal ending at `first` or later needs: every one
    /// before the one in force once `first` is applied.
    pub fn forget_before(&mut self, first: Seq) {
        while self.entries.len() > 1 && self.entries[1].0 <= first {
            self.entries.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{BlockError, SealChain, leaf};
    use crate::identity::{NetworkIdentities, OrdererNode, Role, Signer};
    use crate::tx::now_ms;

    struct Fixture {
        net: NetworkIdentities,
        genesis: NetworkDefinition,
    }

    fn orderer_node(org: &str, name: &str) -> OrdererNode {
        OrdererNode {
            name: name.into(),
            org: org.into(),
            endpoint: "https://127.0.0.1:7050".into(),
            raft_id: 0,
            key: String::new(),
        }
    }

    fn fixture() -> Fixture {
        let net = NetworkIdentities::generate(&["Org1", "Org2"], time::Duration::days(1)).unwrap();
        let mut genesis = NetworkDefinition::of(&net, "main");
        let org1 = net.org("Org1").unwrap().signer(Role::Orderer).unwrap();
        genesis
            .orderers
            .push(orderer_node("Org1", &Fixture::cn(&genesis, &org1)));
        Fixture { net, genesis }
    }

    impl Fixture {
        fn cn(definition: &NetworkDefinition, signer: &Signer) -> String {
            definition
                .msp()
                .unwrap()
                .identify(signer.cert_der())
                .unwrap()
                .name
        }

        fn orderer(&self, org: &str) -> Signer {
            self.net.org(org).unwrap().signer(Role::Orderer).unwrap()
        }

        /// The genesis definition with Org2's orderer in place of Org1's.
        fn replaced(&self) -> NetworkDefinition {
            let mut next = self.genesis.clone();
            next.sequence += 1;
            let name = Fixture::cn(&next, &self.orderer("Org2"));
            next.orderers = vec![orderer_node("Org2", &name)];
            next
        }
    }

    fn seal(by: &Signer, n: u64) -> (Vec<u8>, Vec<crate::tx::Hash>) {
        let leaves: Vec<_> = (0..n)
            .map(|i| leaf(i, format!("tx {i}").as_bytes()))
            .collect();
        let sealed = SealChain::genesis().seal_next(by, &leaves, now_ms());
        (sealed.bytes, leaves)
    }

    #[test]
    fn a_seal_is_signed_by_an_orderer_the_definition_at_its_end_names() {
        let f = fixture();
        let mut trust = SealTrust::of(Seq::ZERO, Arc::new(f.genesis.clone())).unwrap();
        trust.push(Seq(3), Arc::new(f.replaced())).unwrap();
        let accepts = |by: &Signer, n: u64| {
            let (bytes, leaves) = seal(by, n);
            SealChain::genesis().accept(&bytes, &leaves, &trust.after(Seq(n)))
        };
        // Before the update, Org1's orderer; from the block that holds it on, Org2's.
        assert!(accepts(&f.orderer("Org1"), 2).is_ok());
        let refused = accepts(&f.orderer("Org2"), 2).unwrap_err();
        assert!(
            matches!(refused, BlockError::NotAMember { sequence: 0, .. }),
            "{refused}"
        );
        assert_eq!(refused.code(), "ORDERER_NOT_MEMBER");
        assert!(refused.to_string().contains("Org2/"), "{refused}");
        let refused = accepts(&f.orderer("Org1"), 3).unwrap_err();
        assert!(
            matches!(refused, BlockError::NotAMember { sequence: 1, .. }),
            "{refused}"
        );
        assert!(accepts(&f.orderer("Org2"), 3).is_ok());
        assert!(accepts(&f.orderer("Org2"), 5).is_ok());
        // A peer's key is no orderer's, named or not.
        let peer = f.net.org("Org1").unwrap().signer(Role::Peer).unwrap();
        assert!(matches!(accepts(&peer, 2), Err(BlockError::Orderer(_))));
    }

    #[test]
    fn a_definition_that_names_no_orderer_admits_any_orderer_of_its_orgs() {
        let f = fixture();
        let mut open = f.genesis.clone();
        open.orderers.clear();
        let trust = SealTrust::of(Seq::ZERO, Arc::new(open)).unwrap();
        for org in ["Org1", "Org2"] {
            let (bytes, leaves) = seal(&f.orderer(org), 1);
            SealChain::genesis()
                .accept(&bytes, &leaves, &trust.after(Seq(1)))
                .unwrap();
        }
    }

    #[test]
    fn each_seal_is_checked_through_its_own_definitions_msp() {
        // Org1's orderer certificate revoked by the update: its seals before it stand,
        // its seals after it are refused, whatever the peer's own MSP has reached.
        let f = fixture();
        let mut revoking = f.genesis.clone();
        revoking.sequence += 1;
        let key = revoking
            .msp()
            .unwrap()
            .identify(f.orderer("Org1").cert_der())
            .unwrap()
            .key;
        revoking.orgs[0]
            .revoked
            .push(crate::identity::revocation(&key));
        let mut trust = SealTrust::of(Seq::ZERO, Arc::new(f.genesis.clone())).unwrap();
        trust.push(Seq(2), Arc::new(revoking)).unwrap();
        let (bytes, leaves) = seal(&f.orderer("Org1"), 1);
        assert!(
            SealChain::genesis()
                .accept(&bytes, &leaves, &trust.after(Seq(1)))
                .is_ok()
        );
        let (bytes, leaves) = seal(&f.orderer("Org1"), 2);
        let refused = SealChain::genesis()
            .accept(&bytes, &leaves, &trust.after(Seq(2)))
            .unwrap_err();
        assert_eq!(refused.code(), "BAD_ORDERER", "{refused}");
        // Its certificate re-encoded outside the CA's signature is the same revoked
        // orderer, not a new one.
        let issued = f.net.org("Org1").unwrap().identity(Role::Orderer);
        let again = runnel_testing::certs::with_null_parameters(&issued.cert_der);
        let again = Signer::from_pem(&runnel_testing::certs::pem(&again), &issued.key_pem).unwrap();
        let (bytes, leaves) = seal(&again, 2);
        let refused = SealChain::genesis()
            .accept(&bytes, &leaves, &trust.after(Seq(2)))
            .unwrap_err();
        assert_eq!(refused.code(), "BAD_ORDERER", "{refused}");
        assert!(refused.to_string().contains("canonical"), "{refused}");
    }

    #[test]
    fn forgetting_keeps_what_later_seals_need() {
        let f = fixture();
        let mut trust = SealTrust::of(Seq::ZERO, Arc::new(f.genesis.clone())).unwrap();
        let mut next = f.genesis.clone();
        for seq in [4, 9] {
            next.sequence += 1;
            trust.push(Seq(seq), Arc::new(next.clone())).unwrap();
        }
        trust.forget_before(Seq(3));
        assert_eq!(
            trust.entries.len(),
            3,
            "a seal from seq 3 may end before the update at 4"
        );
        trust.forget_before(Seq(4));
        assert_eq!(
            trust.entries.len(),
            2,
            "a seal from seq 4 ends after the update at 4"
        );
        assert_eq!(
            trust
                .updates_within(Seq(5), Seq(9))
                .map(|(seq, _)| seq)
                .collect::<Vec<_>>(),
            vec![Seq(9)]
        );
        trust.forget_before(Seq(100));
        assert_eq!(trust.entries.len(), 1);

        // Made afresh from the updates, it holds what forgetting would have kept.
        let updates = [(Seq(4), f.replaced()), (Seq(9), f.genesis.clone())];
        let froms = |first: u64| -> Vec<Seq> {
            let trust = SealTrust::since(Seq(first), &f.genesis, &updates).unwrap();
            trust.entries.iter().map(|(from, _)| *from).collect()
        };
        assert_eq!(froms(1), vec![Seq::ZERO, Seq(4), Seq(9)]);
        assert_eq!(froms(4), vec![Seq(4), Seq(9)]);
        assert_eq!(froms(5), vec![Seq(4), Seq(9)]);
        assert_eq!(froms(10), vec![Seq(9)]);
        let (bytes, leaves) = seal(&f.orderer("Org1"), 1);
        assert!(
            SealChain::genesis()
                .accept(&bytes, &leaves, &trust.after(Seq(1)))
                .is_ok()
        );
    }
}
