//! The machine's crypto floor, measured in this process before a run: what the Ed25519
//! work a node must do for one transaction costs here, with the node's own code
//! (`Signer::sign`, `sig::verify`, `sig::verify_all`). A node's CPU per committed
//! transaction divided by this floor travels between machines better than tx/s does:
//! the same build measured 231 µs per transaction on one day and 470 µs on another.

use std::hint::black_box;
use std::time::Instant;

use runnel_api::identity::Signer;
use runnel_api::sig::{self, SigCheck};
use serde_json::{Value, json};

/// Signatures made and checked for each figure.
const SAMPLES: usize = 2_000;
/// Signatures per batch in the batch figure (the node's batches under load are larger,
/// which a batch of 64 already nearly matches per signature).
const BATCH: usize = 64;

/// What Ed25519 costs on this machine, in µs per signature.
#[derive(Debug, Clone, Copy)]
pub struct CryptoFloor {
    /// One signature made.
    pub sign_us: f64,
    /// One signature verified alone.
    pub verify_us: f64,
    /// One signature verified in a batch of [`BATCH`].
    pub batch_verify_us: f64,
}

impl CryptoFloor {
    /// Measures the floor with `signer`'s key (a few hundred milliseconds).
    pub fn measure(signer: &Signer) -> CryptoFloor {
        let messages: Vec<Vec<u8>> = (0..SAMPLES)
            .map(|i| format!("runnel crypto floor {i}").into_bytes())
            .collect();
        let start = Instant::now();
        let signatures: Vec<[u8; 64]> = messages.iter().map(|m| signer.sign(m)).collect();
        let sign_us = start.elapsed().as_secs_f64() * 1e6 / SAMPLES as f64;
        let key = signer.public_key();
        let start = Instant::now();
        for (message, signature) in messages.iter().zip(&signatures) {
            assert!(black_box(sig::verify(&key, message, signature)));
        }
        let verify_us = start.elapsed().as_secs_f64() * 1e6 / SAMPLES as f64;
        let checks: Vec<SigCheck> = messages
            .iter()
            .zip(&signatures)
            .map(|(message, signature)| SigCheck {
                key,
                message: message.clone(),
                signature: signature.to_vec(),
            })
            .collect();
        let start = Instant::now();
        for batch in checks.chunks(BATCH) {
            assert!(black_box(sig::verify_all(batch)).iter().all(|&ok| ok));
        }
        let batch_verify_us = start.elapsed().as_secs_f64() * 1e6 / SAMPLES as f64;
        CryptoFloor {
            sign_us,
            verify_us,
            batch_verify_us,
        }
    }

    /// The Ed25519 work a node does for one transaction it endorses and commits: one
    /// endorsement signature, and two verifications in batches (the client's proposal
    /// signature when endorsing, its transaction signature when ordering; the validator
    /// finds both, and the node's own endorsement, already verified in the process).
    pub fn per_tx_us(&self) -> f64 {
        self.sign_us + 2.0 * self.batch_verify_us
    }

    /// The floor as the summary's JSON.
    pub fn json(&self) -> Value {
        json!({
            "ed25519_sign_us": self.sign_us,
            "ed25519_verify_us": self.verify_us,
            "ed25519_batch_verify_us": self.batch_verify_us,
            "per_tx_us": self.per_tx_us(),
        })
    }
}
