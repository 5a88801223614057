//! Orderer fixtures: a network, signed transactions, and a reader that follows a
//! delivery as a peer would, checking every seal.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_ledger::block::{SealChain, Sealers, SignedSealed};
use runnel_ledger::identity::{Msp, NetworkIdentities, Role, Signer};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::{Delivered, Delivery, OrdererConfig, SoloOrderer};
use runnel_ledger::proto::Transaction;
use runnel_ledger::tx::{self, Hash};

/// Long enough for anything that should arrive; tests never wait it out on success.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A two-organisation network and its membership service.
pub struct Net {
    /// The membership service.
    pub msp: Arc<Msp>,
    /// The identities.
    pub ids: NetworkIdentities,
}

impl Default for Net {
    fn default() -> Net {
        Net::new()
    }
}

impl Net {
    /// A new network of Org1 and Org2.
    pub fn new() -> Net {
        let ids = NetworkIdentities::generate(&["Org1", "Org2"], time::Duration::days(1))
            .expect("identities");
        Net {
            msp: Arc::new(ids.msp().expect("msp")),
            ids,
        }
    }

    /// The signer of `org`'s identity with `role`.
    pub fn signer(&self, org: &str, role: Role) -> Signer {
        self.ids
            .org(org)
            .expect("org")
            .signer(role)
            .expect("signer")
    }

    /// A solo orderer in `dir`, signing as Org1's orderer.
    pub fn open(&self, dir: &Path, config: OrdererConfig) -> SoloOrderer {
        SoloOrderer::open(
            dir,
            config,
            self.msp.clone(),
            self.signer("Org1", Role::Orderer),
        )
        .expect("orderer opens")
    }
}

/// A `_config` update from the definition in force (its key at `current`, `None` before
/// the first update) to `next`, proposed by Org1's admin and signed by the admins of
/// `admins`: the encoded `SignedTransaction`.
pub fn config_update(
    net: &Net,
    current: Option<runnel_runtime::Version>,
    next: &runnel_ledger::identity::NetworkDefinition,
    admins: &[&str],
) -> Vec<u8> {
    config_update_by(&|org| net.signer(org, Role::Admin), current, next, admins)
}

/// [`config_update`] with the admins' keys from `admin` (an organisation's admin).
pub fn config_update_by(
    admin: &dyn Fn(&str) -> Signer,
    current: Option<runnel_runtime::Version>,
    next: &runnel_ledger::identity::NetworkDefinition,
    admins: &[&str],
) -> Vec<u8> {
    use prost::Message as _;
    use runnel_ledger::netconfig;
    let proposer = admin("Org1");
    let proposal = tx::new_proposal(
        &next.channel,
        netconfig::CONFIG_NAMESPACE,
        netconfig::FN_UPDATE,
        vec![next.to_bytes()],
        &proposer,
    );
    let mut update =
        netconfig::update_transaction(tx::sign_proposal(&proposer, &proposal), current, next);
    let message = tx::endorsement_message(
        &tx::sha256(&update.proposal.as_ref().expect("a proposal").proposal),
        &tx::sha256(&update.payload),
    );
    for org in admins {
        let signer = admin(org);
        update.endorsements.push(runnel_ledger::proto::Endorsement {
            endorser: signer.cert_der().to_vec(),
            signature: signer.sign(&message).to_vec(),
        });
    }
    tx::sign_transaction(&proposer, &update).encode_to_vec()
}

/// A signed transaction calling `kv.put(key)` on `channel`, endorsed by Org1's peer of
/// `net` (an orderer orders no transaction that no peer endorsed).
pub fn transaction(net: &Net, client: &Signer, channel: &str, key: &str) -> Vec<u8> {
    transaction_with_payload(net, client, channel, key, key.as_bytes().to_vec())
}

/// [`transaction`] with `payload` as its response payload.
pub fn transaction_with_payload(
    net: &Net,
    client: &Signer,
    channel: &str,
    key: &str,
    payload: Vec<u8>,
) -> Vec<u8> {
    let peer = net.signer("Org1", Role::Peer);
    endorsed_transaction(&peer, client, (channel, key), payload)
}

/// A signed transaction calling `kv.put(key)` on `channel` with `payload` as its
/// response payload, endorsed by `endorser` and signed by `client`.
pub fn endorsed_transaction(
    endorser: &Signer,
    client: &Signer,
    (channel, key): (&str, &str),
    payload: Vec<u8>,
) -> Vec<u8> {
    let proposal = tx::new_proposal(channel, "kv", "put", vec![key.as_bytes().to_vec()], client);
    let mut transaction = Transaction {
        proposal: Some(tx::sign_proposal(client, &proposal)),
        payload,
        endorsements: Vec::new(),
    };
    endorse(endorser, &mut transaction);
    prost::Message::encode_to_vec(&tx::sign_transaction(client, &transaction))
}

/// Adds `endorser`'s endorsement of `transaction`'s proposal and payload.
pub fn endorse(endorser: &Signer, transaction: &mut Transaction) {
    let message = tx::endorsement_message(
        &tx::sha256(&transaction.proposal.as_ref().expect("a proposal").proposal),
        &tx::sha256(&transaction.payload),
    );
    transaction
        .endorsements
        .push(runnel_ledger::proto::Endorsement {
            endorser: endorser.cert_der().to_vec(),
            signature: endorser.sign(&message).to_vec(),
        });
}

/// Streaming delivery, sealing every `seal_max_txs` or `seal_max_delay`.
pub fn streaming(seal_max_txs: usize, seal_max_delay: Duration) -> OrdererConfig {
    OrdererConfig {
        seal_max_txs,
        seal_max_delay,
        ..OrdererConfig::default()
    }
}

/// What a subscriber saw, in order.
#[derive(Default)]
pub struct Seen {
    /// Transactions with their seqs.
    pub txs: Vec<(Seq, Vec<u8>)>,
    /// The Merkle leaf of each transaction seen, from its bytes and the timestamp it
    /// came with: what the seals are checked against.
    pub leaves: HashMap<Seq, Hash>,
    /// Seals: number, first and last seq.
    pub seals: Vec<(BlockNumber, Seq, Seq)>,
    /// The seals accepted.
    pub sealed: Vec<SignedSealed>,
    /// The durable mark.
    pub durable: Seq,
    /// Items in arrival order: 't' for a transaction, 's' for a seal.
    pub order: String,
}

/// Reads `delivery` until `done(seen)`, checking each seal against the transactions
/// seen as a peer would.
pub fn read_until(
    delivery: &mut dyn Delivery,
    chain: &mut SealChain,
    msp: &Msp,
    seen: &mut Seen,
    done: impl Fn(&Seen) -> bool,
) {
    let deadline = Instant::now() + PATIENCE;
    while !done(seen) {
        assert!(Instant::now() < deadline, "stream stalled");
        let Some(item) = delivery.next(Duration::from_millis(50)).expect("delivery") else {
            continue;
        };
        match item {
            Delivered::Tx(ordered) => {
                let expected = seen.txs.last().map_or(ordered.seq, |(seq, _)| seq.next());
                assert_eq!(ordered.seq, expected, "transactions in seq order, no gap");
                seen.leaves.insert(ordered.seq, ordered.leaf());
                seen.txs.push((ordered.seq, ordered.transaction));
                seen.order.push('t');
            }
            Delivered::Durable(seq) => {
                assert!(seq >= seen.durable, "durability only moves forward");
                seen.durable = seq;
            }
            Delivered::Seal(sealed) => {
                let range: Vec<Hash> = (sealed.seal.first.0..=sealed.seal.last.0)
                    .map(|seq| {
                        *seen
                            .leaves
                            .get(&Seq(seq))
                            .expect("seal after its transactions")
                    })
                    .collect();
                let accepted = chain
                    .accept(&sealed.bytes, &range, &Sealers::any_orderer(msp))
                    .expect("seal verifies");
                seen.seals.push((
                    accepted.seal.number,
                    accepted.seal.first,
                    accepted.seal.last,
                ));
                seen.sealed.push(accepted);
                seen.order.push('s');
            }
        }
    }
}
