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

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};

use ed25519_zebra::batch;
use ed25519_zebra::{Signature, VerificationKey, VerificationKeyBytes};
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, SeedableRng};
use sha2::{Digest, Sha256};

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
    let Some(key) = verification_key(key) else {
        return false;
    };
    key.verify(&Signature::from_bytes(&signature), message)
        .is_ok()
}

/// Decompressed public keys a [`verify`] remembers; it forgets them all when it would
/// grow past (about 200 bytes each).
const KEYS_MAX: usize = 4096;

/// `key` decompressed, or `None` if it is not a point. A key's point is a pure function
/// of its bytes, so remembering it changes no verdict; it saves a tenth of each
/// signature checked alone (a key decompressed takes ~3 µs here, a verification ~27).
/// A batch decompresses each distinct key once by itself.
fn verification_key(key: &[u8; 32]) -> Option<VerificationKey> {
    static KEYS: LazyLock<Mutex<HashMap<[u8; 32], VerificationKey>>> =
        LazyLock::new(Mutex::default);
    let lock = || KEYS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = lock().get(key) {
        return Some(*known);
    }
    let decompressed = VerificationKey::try_from(*key).ok()?;
    let mut keys = lock();
    if keys.len() >= KEYS_MAX {
        keys.clear();
    }
    keys.insert(*key, decompressed);
    Some(decompressed)
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
    // A batch draws a random scalar per signature: from a generator seeded once from the
    // system, one system call per batch instead of one per signature.
    if well_formed && ChaCha20Rng::from_rng(OsRng).is_ok_and(|rng| verifier.verify(rng).is_ok()) {
        return vec![true; checks.len()];
    }
    // At least one is bad: find which, one by one.
    checks
        .iter()
        .map(|c| verify(&c.key, &c.message, &c.signature))
        .collect()
}

/// Signatures a [`SignatureCache`] remembers; it forgets them all when it would grow past.
pub const SIGNATURE_CACHE_MAX: usize = 1 << 16;

/// Signatures this process has already found valid, so that a transaction's signature
/// checked at admission by an orderer in the same process, or made by an endorser in
/// it, is not verified again by the validator. Only valid verdicts are remembered,
/// keyed by a hash of key, signature and message: a hit is exactly the verdict
/// [`verify`] gave for those bytes, so it can never change a validation code.
#[derive(Debug, Default)]
pub struct SignatureCache {
    valid: Mutex<HashSet<[u8; 32]>>,
    group: GroupVerifier,
    /// Set: signatures this process makes are not taken as verified
    /// ([`SignatureCache::remember_own`] does nothing), so every signature is verified
    /// once by the stage that checks it.
    distrust_own: AtomicBool,
}

impl SignatureCache {
    fn digest(check: &SigCheck) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(check.key);
        hasher.update((check.signature.len() as u32).to_be_bytes());
        hasher.update(&check.signature);
        hasher.update(&check.message);
        hasher.finalize().into()
    }

    /// Remembers `check`, a signature just made with the key in this process, as valid
    /// (every correct Ed25519 signature is), unless [`SignatureCache::trust_own`] said
    /// not to.
    pub fn remember_own(&self, check: &SigCheck) {
        if !self.distrust_own.load(Ordering::Relaxed) {
            self.insert(Self::digest(check));
        }
    }

    /// Whether signatures made in this process count as verified (the default), or are
    /// verified like any other where a stage checks them: the way to measure what
    /// verifying every signature costs.
    pub fn trust_own(&self, trust: bool) {
        self.distrust_own.store(!trust, Ordering::Relaxed);
    }

    /// Forgets every signature remembered, so the next check of each verifies it again
    /// (how a benchmark that reuses signed messages measures verification).
    pub fn forget_all(&self) {
        self.valid
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// True when `check` was remembered as valid.
    pub fn knows(&self, check: &SigCheck) -> bool {
        self.contains(&Self::digest(check))
    }

    fn insert(&self, digest: [u8; 32]) {
        let mut valid = self.valid.lock().unwrap_or_else(PoisonError::into_inner);
        if valid.len() >= SIGNATURE_CACHE_MAX {
            valid.clear();
        }
        valid.insert(digest);
    }

    fn contains(&self, digest: &[u8; 32]) -> bool {
        self.valid
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(digest)
    }

    /// One signature from the cache, or verified together with whatever other threads
    /// are verifying at the same moment ([`GroupVerifier`]); remembered when valid.
    pub fn verify_one(&self, check: &SigCheck) -> bool {
        let digest = Self::digest(check);
        if self.contains(&digest) {
            return true;
        }
        let ok = self.group.verify(check.clone());
        if ok {
            self.insert(digest);
        }
        ok
    }

    /// [`verify_all`], answering remembered signatures from the cache and remembering
    /// the new valid ones. A lone unknown signature goes to the [`GroupVerifier`], to be
    /// batched with other threads' as [`SignatureCache::verify_one`] does.
    pub fn verify_all(&self, checks: &[SigCheck]) -> Vec<bool> {
        let digests: Vec<[u8; 32]> = checks.iter().map(Self::digest).collect();
        let known: Vec<bool> = digests.iter().map(|d| self.contains(d)).collect();
        let unknown: Vec<SigCheck> = checks
            .iter()
            .zip(&known)
            .filter(|(_, known)| !**known)
            .map(|(c, _)| c.clone())
            .collect();
        let verdicts = match <[SigCheck; 1]>::try_from(unknown) {
            Ok([one]) => vec![self.group.verify(one)],
            Err(unknown) => verify_all(&unknown),
        };
        let mut verdicts = verdicts.into_iter();
        digests
            .into_iter()
            .zip(known)
            .map(|(digest, known)| {
                known || {
                    let ok = verdicts.next().unwrap_or(false);
                    if ok {
                        self.insert(digest);
                    }
                    ok
                }
            })
            .collect()
    }
}

/// Verifies signatures submitted by many threads at once as batches, the way group
/// commit batches syncs: a caller queues its signature and, while fewer batches are being
/// verified than the machine has cores, becomes a leader and verifies everything queued as
/// one [`verify_all`]; otherwise it waits for a leader to take its signature. So a lone
/// caller pays one plain check, callers up to the core count verify side by side, and
/// beyond that the queue grows into batches where each signature costs less than half a
/// single verification. The verdicts are [`verify`]'s, whoever computes them.
#[derive(Debug)]
pub struct GroupVerifier {
    state: Mutex<Group>,
    done: Condvar,
    /// Batches verified at once at most: the cores available.
    max_leaders: usize,
}

#[derive(Debug, Default)]
struct Group {
    next_ticket: u64,
    queue: Vec<(u64, SigCheck)>,
    verdicts: HashMap<u64, bool>,
    leaders: usize,
}

impl Default for GroupVerifier {
    fn default() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

impl GroupVerifier {
    /// A verifier that verifies at most `max_leaders` batches at once (at least one).
    pub fn new(max_leaders: usize) -> Self {
        Self {
            state: Mutex::default(),
            done: Condvar::new(),
            max_leaders: max_leaders.max(1),
        }
    }

    /// Checks one signature, batched with concurrent callers'.
    pub fn verify(&self, check: SigCheck) -> bool {
        let lock = || self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut group = lock();
        let ticket = group.next_ticket;
        group.next_ticket += 1;
        group.queue.push((ticket, check));
        loop {
            if let Some(verdict) = group.verdicts.remove(&ticket) {
                return verdict;
            }
            if group.leaders < self.max_leaders && !group.queue.is_empty() {
                group.leaders += 1;
                let batch = std::mem::take(&mut group.queue);
                drop(group);
                let checks: Vec<SigCheck> = batch.iter().map(|(_, c)| c.clone()).collect();
                let verdicts = verify_all(&checks);
                group = lock();
                for ((ticket, _), verdict) in batch.iter().zip(verdicts) {
                    group.verdicts.insert(*ticket, verdict);
                }
                group.leaders -= 1;
                self.done.notify_all();
                continue;
            }
            group = self
                .done
                .wait(group)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
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
    fn a_remembered_key_answers_as_a_fresh_one() {
        // Verified once (its point remembered), then again, and beside another key.
        let check = signed(9, b"again");
        let other = signed(10, b"again");
        for _ in 0..2 {
            assert!(verify(&check.key, &check.message, &check.signature));
            assert!(!verify(&check.key, b"other", &check.signature));
            assert!(!verify(&other.key, &check.message, &check.signature));
        }
        // Bytes that are no point on the curve are refused every time (y = 2 has no x).
        let mut not_a_point = [0u8; 32];
        not_a_point[0] = 2;
        assert!(VerificationKey::try_from(not_a_point).is_err());
        for _ in 0..2 {
            assert!(!verify(&not_a_point, &check.message, &check.signature));
        }
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

    #[test]
    fn the_cache_answers_only_what_it_verified_or_was_told() {
        let cache = SignatureCache::default();
        let good = signed(1, b"m");
        let mut bad = signed(2, b"m");
        bad.signature[0] ^= 1;
        assert!(!cache.knows(&good));
        assert_eq!(
            cache.verify_all(&[good.clone(), bad.clone()]),
            vec![true, false]
        );
        assert!(cache.knows(&good));
        assert!(!cache.knows(&bad));
        // A remembered signature is not a pass for another message or key.
        let mut other = good.clone();
        other.message = b"n".to_vec();
        assert!(!cache.knows(&other));
        assert_eq!(cache.verify_all(&[other, bad]), vec![false, false]);
    }

    #[test]
    fn concurrent_callers_get_their_own_verdicts() {
        for leaders in [1, 2, 3] {
            let group = std::sync::Arc::new(GroupVerifier::new(leaders));
            let threads: Vec<_> = (0..8u8)
                .map(|t| {
                    let group = group.clone();
                    std::thread::spawn(move || {
                        let verdicts: Vec<bool> = (0..50u8)
                            .map(|i| {
                                let mut check = signed(t, &[i; 8]);
                                let forged = (i + t) % 7 == 0;
                                if forged {
                                    check.signature[1] ^= 4;
                                }
                                group.verify(check) != forged
                            })
                            .collect();
                        verdicts.into_iter().all(|right| right)
                    })
                })
                .collect();
            for thread in threads {
                assert!(thread.join().unwrap(), "{leaders} leaders");
            }
        }
    }
}
