//! ABI v1 as the host (runnel-runtime) and the guest (runnel-contract) both speak it:
//! the names a module exports and imports, its version marker, and the byte-list
//! encoding of a call's arguments (docs/abi.md is the reference). One definition, so the
//! two sides cannot drift apart. `no_std` (with `alloc`), as a contract builds it.

#![no_std]

extern crate alloc;

use alloc::vec::Vec;
use core::fmt;

/// The ABI version this crate describes.
pub const ABI_VERSION: u32 = 1;
/// The only module contracts may import from.
pub const IMPORT_MODULE: &str = "runnel";
/// Prefix of the ABI marker export (`runnel_abi_v1`).
pub const ABI_MARKER_PREFIX: &str = "runnel_abi_v";
/// Prefix of contract function exports (`runnel_fn_<name>`).
pub const FUNCTION_PREFIX: &str = "runnel_fn_";
/// The guest allocator export.
pub const EXPORT_ALLOC: &str = "runnel_alloc";
/// The linear memory export.
pub const EXPORT_MEMORY: &str = "memory";

/// The version `N` of an export named `runnel_abi_vN`.
pub fn abi_marker_version(export: &str) -> Option<u32> {
    export.strip_prefix(ABI_MARKER_PREFIX)?.parse().ok()
}

/// Encodes a byte list: `u32 count`, then `u32 len, len bytes` per item (little-endian).
pub fn encode_byte_list<T: AsRef<[u8]>>(items: &[T]) -> Vec<u8> {
    let len = 4 + items.iter().map(|i| 4 + i.as_ref().len()).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for item in items {
        out.extend_from_slice(&(item.as_ref().len() as u32).to_le_bytes());
        out.extend_from_slice(item.as_ref());
    }
    out
}

/// Why bytes are not a byte list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByteListError {
    /// The input ends inside a length.
    TruncatedLength,
    /// More items announced than the bytes that follow could hold.
    TooManyItems {
        /// Items announced.
        count: usize,
        /// Bytes after the count.
        remaining: usize,
    },
    /// An item's length runs past the end.
    ItemTooLong {
        /// Which item.
        index: usize,
        /// Its announced length.
        len: usize,
        /// Bytes left.
        remaining: usize,
    },
    /// Bytes after the last item.
    TrailingBytes(usize),
}

impl fmt::Display for ByteListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ByteListError::TruncatedLength => write!(f, "byte list: truncated length"),
            ByteListError::TooManyItems { count, remaining } => write!(
                f,
                "byte list: {count} items announced, but only {remaining} bytes follow"
            ),
            ByteListError::ItemTooLong {
                index,
                len,
                remaining,
            } => write!(
                f,
                "byte list: item {index} is {len} bytes, but only {remaining} bytes follow"
            ),
            ByteListError::TrailingBytes(n) => {
                write!(f, "byte list: {n} bytes after the last item")
            }
        }
    }
}

impl core::error::Error for ByteListError {}

/// Decodes a byte list (see [`encode_byte_list`]). Truncated input, lengths that run past
/// the end and trailing bytes are errors; the allocation is bounded by the input's size.
pub fn decode_byte_list(bytes: &[u8]) -> Result<Vec<Vec<u8>>, ByteListError> {
    let mut rest = bytes;
    let count = take_u32(&mut rest)? as usize;
    // Each item needs at least its 4-byte length: bounds the allocation by the input.
    if count > rest.len() / 4 {
        return Err(ByteListError::TooManyItems {
            count,
            remaining: rest.len(),
        });
    }
    let mut items = Vec::with_capacity(count);
    for index in 0..count {
        let len = take_u32(&mut rest)? as usize;
        let Some((item, tail)) = rest.split_at_checked(len) else {
            return Err(ByteListError::ItemTooLong {
                index,
                len,
                remaining: rest.len(),
            });
        };
        items.push(item.to_vec());
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(ByteListError::TrailingBytes(rest.len()));
    }
    Ok(items)
}

fn take_u32(rest: &mut &[u8]) -> Result<u32, ByteListError> {
    let Some((head, tail)) = rest.split_first_chunk::<4>() else {
        return Err(ByteListError::TruncatedLength);
    };
    *rest = tail;
    Ok(u32::from_le_bytes(*head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn byte_lists_round_trip_and_bad_ones_are_refused() {
        let items: Vec<Vec<u8>> = vec![b"".to_vec(), b"ab".to_vec(), vec![0xff; 300]];
        assert_eq!(decode_byte_list(&encode_byte_list(&items)).unwrap(), items);
        assert_eq!(
            decode_byte_list(&encode_byte_list::<&[u8]>(&[])).unwrap(),
            Vec::<Vec<u8>>::new()
        );
        let good = encode_byte_list(&["ab", "c"]);
        assert_eq!(
            decode_byte_list(&good[..2]),
            Err(ByteListError::TruncatedLength)
        );
        assert!(matches!(
            decode_byte_list(&good[..good.len() - 1]),
            Err(ByteListError::ItemTooLong { index: 1, .. })
        ));
        let mut long = good.clone();
        long.push(0);
        assert_eq!(
            decode_byte_list(&long),
            Err(ByteListError::TrailingBytes(1))
        );
        // A count far beyond the input allocates nothing.
        assert!(matches!(
            decode_byte_list(&u32::MAX.to_le_bytes()),
            Err(ByteListError::TooManyItems { .. })
        ));
    }

    #[test]
    fn the_marker_names_its_version() {
        assert_eq!(abi_marker_version("runnel_abi_v1"), Some(ABI_VERSION));
        assert_eq!(abi_marker_version("runnel_abi_vx"), None);
        assert_eq!(abi_marker_version("runnel_fn_put"), None);
    }
}
