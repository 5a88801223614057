//! The transactions a run submits, made and signed before its clock starts, so that the
//! figures are the ordering service's and not this process's signing.
//!
//! Each is what a peer forwards for a kv `put`: a proposal by the organisation's client
//! (its key and the payload as arguments), a response payload endorsed by the peer
//! whose key this process holds, and the client's signature over the whole. Every
//! signature is real; the orderer verifies the submitter's at admission and leaves the
//! endorsement to the validators, as it does for any peer's transaction.

use prost::Message;
use runnel_api::identity::Signer;
use runnel_api::proto::{Endorsement, ResponsePayload, Transaction};
use runnel_api::tx;

/// The contract and function the transactions name: the orderer never looks past the
/// name, which a peer's role may endorse.
const CONTRACT: &str = "kv";
const FUNCTION: &str = "put";

/// Who signs: the organisation's client (proposal and transaction) and its peer
/// (endorsement).
pub(super) struct Signers {
    pub client: Signer,
    pub peer: Signer,
}

/// `count` encoded `SignedTransaction`s on `channel`, each with `payload_bytes` of
/// payload, signed on every core. Keys are `order-<run_id>-<i>`, so two runs never
/// write the same key.
pub(super) fn sign_all(
    signers: &Signers,
    channel: &str,
    run_id: &str,
    payload_bytes: usize,
    count: usize,
) -> Vec<Vec<u8>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(count.max(1));
    let per_thread = count.div_ceil(threads);
    let payload = vec![b'v'; payload_bytes];
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..threads)
            .map(|thread| {
                let payload = &payload;
                scope.spawn(move || {
                    let from = thread * per_thread;
                    let to = (from + per_thread).min(count);
                    (from..to)
                        .map(|i| one(signers, channel, &format!("order-{run_id}-{i}"), payload))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| {
                part.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// One signed transaction writing `payload` under `key`.
fn one(signers: &Signers, channel: &str, key: &str, payload: &[u8]) -> Vec<u8> {
    let proposal = tx::new_proposal(
        channel,
        CONTRACT,
        FUNCTION,
        vec![key.as_bytes().to_vec(), payload.to_vec()],
        &signers.client,
    );
    let signed_proposal = tx::sign_proposal(&signers.client, &proposal);
    let proposal_hash = tx::sha256(&signed_proposal.proposal);
    let response = ResponsePayload {
        proposal_hash: proposal_hash.to_vec(),
        ..ResponsePayload::default()
    }
    .encode_to_vec();
    let endorsement = Endorsement {
        endorser: signers.peer.cert_der().to_vec(),
        signature: signers
            .peer
            .sign(&tx::endorsement_message(
                &proposal_hash,
                &tx::sha256(&response),
            ))
            .to_vec(),
    };
    let transaction = Transaction {
        proposal: Some(signed_proposal),
        payload: response,
        endorsements: vec![endorsement],
    };
    tx::sign_transaction(&signers.client, &transaction).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_api::identity::{NetworkIdentities, Role};

    #[test]
    fn every_transaction_is_signed_by_its_creator_and_endorsed_by_the_peer() {
        let ids = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
        let org = ids.org("Org1").unwrap();
        let signers = Signers {
            client: org.signer(Role::Client).unwrap(),
            peer: org.signer(Role::Peer).unwrap(),
        };
        let txs = sign_all(&signers, "main", "t", 40, 5);
        assert_eq!(txs.len(), 5);
        let msp = ids.msp().unwrap();
        let mut ids_seen = std::collections::HashSet::new();
        for bytes in &txs {
            let (signed, transaction, proposal) = tx::decode_transaction(bytes).unwrap();
            assert_eq!(proposal.channel, "main");
            assert_eq!(proposal.args[1].len(), 40);
            assert!(ids_seen.insert(tx::tx_id(&proposal)));
            let creator = msp.verify(&proposal.creator, tx::now_seconds()).unwrap();
            assert_eq!(creator.role, Role::Client);
            creator
                .verify(
                    &tx::transaction_message(&tx::sha256(&signed.transaction)),
                    &signed.signature,
                )
                .unwrap();
            let endorsement = &transaction.endorsements[0];
            let endorser = msp
                .verify(&endorsement.endorser, tx::now_seconds())
                .unwrap();
            assert_eq!(endorser.role, Role::Peer);
            let proposal_hash = tx::sha256(&transaction.proposal.unwrap().proposal);
            endorser
                .verify(
                    &tx::endorsement_message(&proposal_hash, &tx::sha256(&transaction.payload)),
                    &endorsement.signature,
                )
                .unwrap();
        }
    }
}
