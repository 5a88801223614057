//! A block's Merkle tree: the leaf of an ordered transaction, the tree hash over a block's
//! leaves, and the audit path that proves one leaf is in it. A wire format: the orderer
//! signs the root in a seal (runnel-ledger's `block`), and clients check a proof against
//! it (the SDK's `verifyInclusionProof`) without the rest of the block. These functions
//! depend on nothing but SHA-256, and never see a seal, a signature or a store.
//!
//! The leaf of a transaction is its [`leaf`]: the SHA-256 of [`LEAF_DOMAIN`], the
//! orderer's timestamp for its seq (Unix milliseconds, u64 big-endian) and its
//! `SignedTransaction` bytes, so that the orderer's signature covers the time every peer
//! validates the transaction at, as well as its bytes. The tag and the timestamp have
//! fixed lengths, so one leaf never reads as another's timestamp and bytes. The tree is
//! RFC 6962 section 2.1's over the leaves, in seq order:
//!
//! - the empty tree hashes to the SHA-256 of nothing;
//! - a leaf `d` hashes to `SHA-256(0x00 ‖ d)`;
//! - a tree of n > 1 leaves is split at k, the largest power of two smaller than n, and
//!   hashes to `SHA-256(0x01 ‖ MTH(first k leaves) ‖ MTH(the other n - k))`.
//!
//! The distinct leaf and node prefixes keep a leaf from passing for an inner node.
//! [`inclusion_path`] gives the audit path of one leaf and [`verify_inclusion`] checks it
//! (RFC 9162 section 2.1.3.2).

use sha2::{Digest, Sha256};

use crate::tx::{Hash, sha256};

/// Prefix of a leaf hash (RFC 6962 section 2.1).
const LEAF_PREFIX: u8 = 0x00;
/// Prefix of an inner node hash (RFC 6962 section 2.1).
const NODE_PREFIX: u8 = 0x01;

/// Domain tag of a block's Merkle leaves ([`leaf`]).
pub const LEAF_DOMAIN: &[u8] = b"runnel.leaf.v1";

/// The Merkle leaf of the transaction the orderer ordered at `timestamp_ms` (Unix
/// milliseconds): `SHA-256("runnel.leaf.v1" ‖ timestamp_ms u64be ‖ SignedTransaction
/// bytes)`. RFC 6962's leaf prefix is added over it when the tree is hashed.
pub fn leaf(timestamp_ms: u64, signed_transaction: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(LEAF_DOMAIN);
    hasher.update(timestamp_ms.to_be_bytes());
    hasher.update(signed_transaction);
    hasher.finalize().into()
}

fn leaf_hash(leaf: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([LEAF_PREFIX]);
    hasher.update(leaf);
    hasher.finalize().into()
}

fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([NODE_PREFIX]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The largest power of two smaller than `n`, for `n > 1`.
fn split(n: usize) -> usize {
    1 << (n - 1).ilog2()
}

/// The RFC 6962 Merkle tree hash of `leaves` (SHA-256 of nothing for no leaves).
pub fn merkle_root(leaves: &[Hash]) -> Hash {
    match leaves {
        [] => sha256(&[]),
        [leaf] => leaf_hash(leaf),
        _ => {
            let k = split(leaves.len());
            node_hash(&merkle_root(&leaves[..k]), &merkle_root(&leaves[k..]))
        }
    }
}

/// The RFC 6962 audit path of leaf `index`: the sibling hashes from the leaf up to the
/// root.
///
/// # Panics
///
/// If `index >= leaves.len()`.
pub fn inclusion_path(leaves: &[Hash], index: usize) -> Vec<Hash> {
    assert!(
        index < leaves.len(),
        "leaf {index} is outside a tree of {} leaves",
        leaves.len()
    );
    let mut path = Vec::new();
    push_path(leaves, index, &mut path);
    path
}

fn push_path(leaves: &[Hash], index: usize, path: &mut Vec<Hash>) {
    if leaves.len() <= 1 {
        return;
    }
    let k = split(leaves.len());
    if index < k {
        push_path(&leaves[..k], index, path);
        path.push(merkle_root(&leaves[k..]));
    } else {
        push_path(&leaves[k..], index - k, path);
        path.push(merkle_root(&leaves[..k]));
    }
}

/// Checks that `path` proves `leaf` is leaf `index` of a tree of `count` leaves whose hash
/// is `root` (RFC 9162 section 2.1.3.2). False on any inconsistency, never a panic.
pub fn verify_inclusion(leaf: &Hash, index: u64, count: u64, path: &[Hash], root: &Hash) -> bool {
    if index >= count {
        return false;
    }
    let mut node = index;
    let mut last = count - 1;
    let mut hash = leaf_hash(leaf);
    for sibling in path {
        if last == 0 {
            return false;
        }
        if node & 1 == 1 || node == last {
            hash = node_hash(sibling, &hash);
            while node & 1 == 0 && node != 0 {
                node >>= 1;
                last >>= 1;
            }
        } else {
            hash = node_hash(&hash, sibling);
        }
        node >>= 1;
        last >>= 1;
    }
    last == 0 && hash == *root
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::sample::Index;
    use proptest::test_runner::FileFailurePersistence;

    use super::*;

    /// Largest tree size checked exhaustively.
    const EXHAUSTIVE_MAX: usize = 70;

    // An independent, deliberately naive RFC 6962 section 2.1 implementation: byte
    // concatenation, a loop for the split point, and recursion straight from the text.

    fn naive_sha256(parts: &[&[u8]]) -> Hash {
        let mut bytes = Vec::new();
        for part in parts {
            bytes.extend_from_slice(part);
        }
        let digest = Sha256::digest(&bytes);
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&digest);
        hash
    }

    fn naive_k(n: usize) -> usize {
        let mut k = 1;
        while k * 2 < n {
            k *= 2;
        }
        k
    }

    fn naive_mth(d: &[Hash]) -> Hash {
        let n = d.len();
        if n == 0 {
            return naive_sha256(&[]);
        }
        if n == 1 {
            return naive_sha256(&[&[0u8], &d[0]]);
        }
        let k = naive_k(n);
        naive_sha256(&[&[1u8], &naive_mth(&d[0..k]), &naive_mth(&d[k..n])])
    }

    fn naive_path(m: usize, d: &[Hash]) -> Vec<Hash> {
        let n = d.len();
        if n == 1 {
            return Vec::new();
        }
        let k = naive_k(n);
        if m < k {
            let mut path = naive_path(m, &d[0..k]);
            path.push(naive_mth(&d[k..n]));
            path
        } else {
            let mut path = naive_path(m - k, &d[k..n]);
            path.push(naive_mth(&d[0..k]));
            path
        }
    }

    /// Which side each sibling of leaf `m` in a tree of `n` is on, leaf to root (true:
    /// left). Two (index, size) pairs with the same sides share an audit path shape.
    fn naive_sides(m: usize, n: usize) -> Vec<bool> {
        if n == 1 {
            return Vec::new();
        }
        let k = naive_k(n);
        if m < k {
            let mut sides = naive_sides(m, k);
            sides.push(false);
            sides
        } else {
            let mut sides = naive_sides(m - k, n - k);
            sides.push(true);
            sides
        }
    }

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n)
            .map(|i| leaf(1_000 + i as u64, format!("transaction {i}").as_bytes()))
            .collect()
    }

    #[test]
    fn empty_tree_is_the_hash_of_nothing() {
        assert_eq!(
            hex::encode(merkle_root(&[])),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn small_trees_have_the_rfc_6962_shape() {
        let d = leaves(3);
        let leaf = |i: usize| naive_sha256(&[&[0u8], &d[i]]);
        let node = |l: Hash, r: Hash| naive_sha256(&[&[1u8], &l, &r]);
        assert_eq!(merkle_root(&d[..1]), leaf(0));
        assert_eq!(merkle_root(&d[..2]), node(leaf(0), leaf(1)));
        assert_eq!(merkle_root(&d), node(node(leaf(0), leaf(1)), leaf(2)));
        assert_eq!(inclusion_path(&d, 2), vec![node(leaf(0), leaf(1))]);
        assert_eq!(inclusion_path(&d, 0), vec![leaf(1), leaf(2)]);
    }

    #[test]
    fn roots_and_paths_match_the_naive_implementation() {
        for n in 0..=EXHAUSTIVE_MAX {
            let d = leaves(n);
            assert_eq!(merkle_root(&d), naive_mth(&d), "root of {n}");
            for m in 0..n {
                assert_eq!(inclusion_path(&d, m), naive_path(m, &d), "path {m} of {n}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "outside a tree")]
    fn path_of_a_missing_leaf_panics() {
        inclusion_path(&leaves(3), 3);
    }

    #[test]
    fn every_leaf_of_every_tree_proves_and_nothing_else_does() {
        for n in 1..=EXHAUSTIVE_MAX {
            let d = leaves(n);
            let root = merkle_root(&d);
            let count = n as u64;
            for m in 0..n {
                let index = m as u64;
                let path = inclusion_path(&d, m);
                let leaf = &d[m];
                assert!(
                    verify_inclusion(leaf, index, count, &path, &root),
                    "{m}/{n}"
                );

                let other = super::leaf(1_000, b"another transaction");
                assert!(!verify_inclusion(&other, index, count, &path, &root));

                for wrong in (0..count + 2).filter(|&i| i != index) {
                    assert!(
                        !verify_inclusion(leaf, wrong, count, &path, &root),
                        "index {wrong} for {m}/{n}"
                    );
                }
                assert!(!verify_inclusion(leaf, u64::MAX, count, &path, &root));

                // A different size verifies only where the leaf's audit path has the
                // same shape (RFC 9162 binds the path to the root, not to the size).
                let sizes = (0..=n + 4).chain([2 * n, 4 * n + 1]);
                for size in sizes.filter(|&size| size != n) {
                    let same_shape = m < size && naive_sides(m, size) == naive_sides(m, n);
                    assert_eq!(
                        verify_inclusion(leaf, index, size as u64, &path, &root),
                        same_shape,
                        "size {size} for {m}/{n}"
                    );
                }
                assert!(!verify_inclusion(leaf, index, 0, &path, &root));
                assert!(!verify_inclusion(leaf, index, u64::MAX, &path, &root));

                if !path.is_empty() {
                    let truncated = &path[..path.len() - 1];
                    assert!(!verify_inclusion(leaf, index, count, truncated, &root));
                    let mut flipped = path.clone();
                    flipped[0][0] ^= 1;
                    assert!(!verify_inclusion(leaf, index, count, &flipped, &root));
                }
                let mut extended = path.clone();
                extended.push(root);
                assert!(!verify_inclusion(leaf, index, count, &extended, &root));
                let mut wrong_root = root;
                wrong_root[31] ^= 1;
                assert!(!verify_inclusion(leaf, index, count, &path, &wrong_root));
            }
        }
    }

    #[test]
    fn hostile_paths_are_refused_without_panicking() {
        let leaf = leaf(1_000, b"tx");
        let root = merkle_root(&[leaf]);
        let long = vec![root; 200];
        for (index, count) in [(0, 1), (0, u64::MAX), (u64::MAX - 1, u64::MAX), (5, 3)] {
            assert!(!verify_inclusion(&leaf, index, count, &long, &root));
        }
        assert!(verify_inclusion(&leaf, 0, 1, &[], &root));
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
            ..ProptestConfig::default()
        })]

        #[test]
        fn random_trees_prove_their_leaves(
            d in proptest::collection::vec(any::<[u8; 32]>(), 1..400),
            pick in any::<Index>(),
            flip in any::<Index>(),
        ) {
            let root = merkle_root(&d);
            prop_assert_eq!(root, naive_mth(&d));
            let m = pick.index(d.len());
            let path = inclusion_path(&d, m);
            prop_assert_eq!(&path, &naive_path(m, &d));
            let (index, count) = (m as u64, d.len() as u64);
            prop_assert!(verify_inclusion(&d[m], index, count, &path, &root));
            if !path.is_empty() {
                let mut tampered = path.clone();
                let bit = flip.index(path.len() * 256);
                tampered[bit / 256][(bit % 256) / 8] ^= 1 << (bit % 8);
                prop_assert!(!verify_inclusion(&d[m], index, count, &tampered, &root));
            }
        }
    }

    #[test]
    fn a_leaf_is_the_domain_tag_the_timestamp_and_the_bytes() {
        let tx = b"signed transaction";
        let timestamp_ms: u64 = 1_700_000_000_123;
        assert_eq!(
            leaf(timestamp_ms, tx),
            naive_sha256(&[b"runnel.leaf.v1", &timestamp_ms.to_be_bytes(), tx])
        );
        // Fixed-length fields: moving bytes between the timestamp and the transaction
        // makes another leaf.
        let mut shifted = timestamp_ms.to_be_bytes()[1..].to_vec();
        shifted.extend_from_slice(tx);
        assert_ne!(leaf(timestamp_ms >> 8, &shifted), leaf(timestamp_ms, tx));
        assert_ne!(leaf(timestamp_ms, tx), leaf(timestamp_ms + 1, tx));
        assert_ne!(leaf(timestamp_ms, tx), sha256(tx));
    }
}
