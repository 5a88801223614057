//! Composite keys, encoded as Hyperledger Fabric encodes them.
//!
//! `CompositeKey::new("asset", &["a1", "blue"])` is the key `\0asset\0a1\0blue\0`. The
//! leading `\0` keeps composite keys apart from every plain (printable) key, and because
//! each part ends in `\0`, the keys of one object type, or of one type and leading
//! attributes, form a contiguous range: [`Context::by_partial_composite_key`] iterates it.
//!
//! [`Context::by_partial_composite_key`]: crate::Context::by_partial_composite_key

use crate::{Error, Result};

/// Separates (and opens) the parts of a composite key.
const SEPARATOR: char = '\u{0}';
/// Fabric refuses this code point in parts too: its range queries use it as an upper bound.
const MAX_CODE_POINT: char = '\u{10FFFF}';

/// A key made of an object type and attributes: `\0objectType\0attr1\0attr2\0`, as in
/// Fabric. No part may contain U+0000 or U+10FFFF.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CompositeKey(String);

impl CompositeKey {
    /// The key of `object_type` with `attributes`. The type must be non-empty; no part may
    /// contain U+0000 or U+10FFFF.
    pub fn new<S: AsRef<str>>(object_type: &str, attributes: &[S]) -> Result<Self> {
        if object_type.is_empty() {
            return Err(Error::new(
                "composite key: the object type must not be empty",
            ));
        }
        Self::partial(object_type, attributes)
    }

    /// The prefix shared by every key of `object_type` whose attributes start with
    /// `attributes` (all of them if `attributes` is empty). An empty `object_type` gives
    /// the prefix of every composite key.
    pub fn partial<S: AsRef<str>>(object_type: &str, attributes: &[S]) -> Result<Self> {
        let mut key = String::with_capacity(
            2 + object_type.len()
                + attributes
                    .iter()
                    .map(|a| a.as_ref().len() + 1)
                    .sum::<usize>(),
        );
        key.push(SEPARATOR);
        if object_type.is_empty() && !attributes.is_empty() {
            return Err(Error::new(
                "composite key: attributes given without an object type",
            ));
        }
        if !object_type.is_empty() {
            push_part(&mut key, object_type)?;
        }
        for attribute in attributes {
            push_part(&mut key, attribute.as_ref())?;
        }
        Ok(CompositeKey(key))
    }

    /// Splits a stored composite key into its object type and attributes.
    pub fn split(key: &[u8]) -> Result<(String, Vec<String>)> {
        let text = core::str::from_utf8(key).map_err(|_| Error::new("composite key: not UTF-8"))?;
        let body = text
            .strip_prefix(SEPARATOR)
            .and_then(|t| t.strip_suffix(SEPARATOR))
            .ok_or_else(|| Error::new("composite key: must start and end with U+0000"))?;
        let mut parts = body.split(SEPARATOR).map(str::to_string);
        let object_type = parts.next().unwrap_or_default();
        if object_type.is_empty() {
            return Err(Error::new("composite key: empty object type"));
        }
        Ok((object_type, parts.collect()))
    }

    /// The encoded key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The encoded key, as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

fn push_part(key: &mut String, part: &str) -> Result<()> {
    if let Some(bad) = part
        .chars()
        .find(|c| *c == SEPARATOR || *c == MAX_CODE_POINT)
    {
        return Err(Error::new(format!(
            "composite key: {part:?} contains U+{:04X}, which is not allowed in a key part",
            bad as u32
        )));
    }
    key.push_str(part);
    key.push(SEPARATOR);
    Ok(())
}

impl AsRef<[u8]> for CompositeKey {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl core::fmt::Display for CompositeKey {
    /// Shows the key with `\0` written as `\u{0}`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.0.escape_default())
    }
}

/// The smallest key greater than every key that starts with `prefix`, or `None` if there
/// is none (an empty prefix, or one of only `0xFF` bytes).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_fabric() {
        let key = CompositeKey::new("asset", &["a1", "blue"]).unwrap();
        assert_eq!(key.as_str(), "\u{0}asset\u{0}a1\u{0}blue\u{0}");
        assert_eq!(key.to_string(), "\\u{0}asset\\u{0}a1\\u{0}blue\\u{0}");
        let none: [&str; 0] = [];
        assert_eq!(
            CompositeKey::new("asset", &none).unwrap().as_str(),
            "\u{0}asset\u{0}"
        );
        assert_eq!(
            CompositeKey::new("t", &[String::from("")])
                .unwrap()
                .as_str(),
            "\u{0}t\u{0}\u{0}"
        );
    }

    #[test]
    fn split_inverts_new() {
        let key = CompositeKey::new("asset", &["a1", "", "ü"]).unwrap();
        let (object_type, attributes) = CompositeKey::split(key.as_bytes()).unwrap();
        assert_eq!(object_type, "asset");
        assert_eq!(attributes, ["a1", "", "ü"]);
        for bad in [&b"asset"[..], b"\0asset", b"\0\0", b"", b"\0\xff\0"] {
            assert!(CompositeKey::split(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refuses_bad_parts() {
        assert!(CompositeKey::new("", &["a"]).is_err());
        let error = CompositeKey::new("asset", &["a\u{0}b"]).unwrap_err();
        assert!(error.message().contains("U+0000"), "{error}");
        assert!(CompositeKey::new("as\u{10FFFF}", &["a"]).is_err());
        assert!(CompositeKey::partial("", &["a"]).is_err());
        let none: [&str; 0] = [];
        assert_eq!(CompositeKey::partial("", &none).unwrap().as_str(), "\u{0}");
    }

    #[test]
    fn partial_keys_are_prefixes() {
        let full = CompositeKey::new("asset", &["Org1", "a1"]).unwrap();
        let partial = CompositeKey::partial("asset", &["Org1"]).unwrap();
        assert!(full.as_bytes().starts_with(partial.as_bytes()));
        let other = CompositeKey::new("asset", &["Org10", "a1"]).unwrap();
        assert!(!other.as_bytes().starts_with(partial.as_bytes()));
    }

    #[test]
    fn prefix_end_is_the_next_key() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
