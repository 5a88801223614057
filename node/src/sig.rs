//! Signature checks whose outcome decides a transaction's validation code.
//!
//! Every peer must reach the same verdict on the same bytes, whether it checked a
//! signature alone or in a batch with others. Ed25519 implementations disagree at the
//! edges (small-order points, non-canonical encodings, cofactored or not), and a batch
//! check uses the cofactored equation, so checking one signature strictly and a batch
//! loosely would let a crafted signature be valid on one peer and invalid on another.
//! Runnel therefore checks these signatures with the ZIP-215 rules (`ed25519-zebra`),
//! under which one-by-one and batch verification accept exactly the same signatures:
//! batching is then a pure speed-up, never a change of outcome.

use ed25519_zebra::batch;
use ed25519_zebra::{Signature, VerificationKey, VerificationKeyBytes};
use rand_core::OsRng;

/// One signature to check: a public key, the signed message and the signature.
#[derive(Debug, Clone)]
pub struct SigCheck {
    /// The signer's Ed25519 public key.
    pub key: [u8; 32],
    /// The exact message signed (a domain tag and hashes, see `crate::tx`).
    pub message: Vec<u8>,
    /// The signature as sent; anything but 64 bytes fails.
    pub signature: Vec<u8>,
}

/// Checks one signature under ZIP-215.
pub fn verify(key: &[u8; 32], message: &[u8], signature: &[u8]) -> bool {
    let Ok(signature) = <[u8; 64]>::try_from(signature) else {
        return false;
    };
    let Ok(key) = VerificationKey::try_from(*key) else {
        return false;
    };
    key.verify(&Signature::from_bytes(&signature), message)
        .is_ok()
}

/// Checks every signature, as one batch when there are several; the answers are in the
/// order of `checks`, and are exactly what [`verify`] would answer for each.
pub fn verify_all(checks: &[SigCheck]) -> Vec<bool> {
    if checks.len() < 2 {
        return checks
            .iter()
            .map(|c| verify(&c.key, &c.message, &c.signature))
            .collect();
    }
    let mut verifier = batch::Verifier::new();
    let mut well_formed = true;
    for check in checks {
        match <[u8; 64]>::try_from(check.signature.as_slice()) {
            Ok(signature) => verifier.queue((
                VerificationKeyBytes::from(check.key),
                Signature::from_bytes(&signature),
                &check.message,
            )),
            Err(_) => well_formed = false,
        }
    }
    if well_formed && verifier.verify(OsRng).is_ok() {
        return vec![true; checks.len()];
    }
    // At least one is bad: find which, one by one.
    checks
        .iter()
        .map(|c| verify(&c.key, &c.message, &c.signature))
        .collect()
}

#[cfg(test)]
mod tests {
    use ed25519_zebra::SigningKey;

    use super::*;

    fn signed(seed: u8, message: &[u8]) -> SigCheck {
        let key = SigningKey::from([seed; 32]);
        SigCheck {
            key: VerificationKeyBytes::from(&key).into(),
            message: message.to_vec(),
            signature: key.sign(message).to_bytes().to_vec(),
        }
    }

    #[test]
    fn good_signatures_pass_alone_and_in_a_batch() {
        let checks: Vec<SigCheck> = (0..9).map(|i| signed(i, &[i; 40])).collect();
        assert!(
            checks
                .iter()
                .all(|c| verify(&c.key, &c.message, &c.signature))
        );
        assert_eq!(verify_all(&checks), vec![true; 9]);
    }

    #[test]
    fn a_bad_signature_fails_alone_and_its_batch_neighbours_still_pass() {
        let mut checks: Vec<SigCheck> = (0..6).map(|i| signed(i, b"runnel")).collect();
        checks[2].message = b"other".to_vec();
        checks[4].signature[10] ^= 1;
        checks[5].signature.pop();
        assert_eq!(
            verify_all(&checks),
            vec![true, true, false, true, false, false]
        );
        let mut wrong_key = signed(7, b"m");
        wrong_key.key = signed(8, b"m").key;
        assert!(!verify(
            &wrong_key.key,
            &wrong_key.message,
            &wrong_key.signature
        ));
        assert_eq!(
            verify_all(&[wrong_key.clone(), signed(1, b"m")]),
            vec![false, true]
        );
    }

    #[test]
    fn dalek_signatures_verify_here() {
        // Identities sign with ed25519-dalek; ZIP-215 accepts every standard signature.
        use ed25519_dalek::Signer as _;
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let signature = key.sign(b"message");
        assert!(verify(
            key.verifying_key().as_bytes(),
            b"message",
            &signature.to_bytes()
        ));
    }
}
