//! Example contract: a key-value store of UTF-8 strings.
//!
//! Values are stored as the raw UTF-8 bytes of the value (not JSON), so other contracts
//! and tools read them as plain text.
//!
//! | function | arguments | returns |
//! |---|---|---|
//! | `put` | `key`, `value` | `null` |
//! | `get` | `key` | the value, or `null` if absent |
//! | `update` | `key`, `value` | the previous value, or `null` (a read-modify-write: the read conflicts with a concurrent update) |
//! | `delete` | `key` | `null` |
//! | `range` | `start`, `end` (`""`: no upper bound) | `[{"key": ..., "value": ...}]` for `start <= key < end` |

/// The contract's functions.
#[runnel_contract::contract]
pub mod kv {
    use runnel_contract::prelude::*;

    /// One entry returned by [`range`].
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct Pair {
        /// The key.
        pub key: String,
        /// Its value.
        pub value: String,
    }

    /// Stores `value` under `key`.
    pub fn put(ctx: &mut Context, key: String, value: String) -> Result<()> {
        ctx.put_bytes(key, value)
    }

    /// The value under `key`, if any.
    pub fn get(ctx: &mut Context, key: String) -> Result<Option<String>> {
        match ctx.get_bytes(&key)? {
            Some(bytes) => text(&key, bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Reads `key`, then stores `value` under it, and returns what was there: a
    /// read-modify-write, so two concurrent updates of one key cannot both commit (the
    /// second is an MVCC read conflict).
    pub fn update(ctx: &mut Context, key: String, value: String) -> Result<Option<String>> {
        let previous = get(ctx, key.clone())?;
        ctx.put_bytes(key, value)?;
        Ok(previous)
    }

    /// Deletes `key` (deleting an absent key is not an error).
    pub fn delete(ctx: &mut Context, key: String) -> Result<()> {
        ctx.delete(key)
    }

    /// The entries with `start <= key < end`, in key order; `end == ""` means no upper
    /// bound.
    pub fn range(ctx: &mut Context, start: String, end: String) -> Result<Vec<Pair>> {
        ctx.range(start, end)?
            .map(|(key, value)| {
                let key = String::from_utf8(key)
                    .map_err(|e| Error::new(format!("a stored key is not UTF-8: {e}")))?;
                let value = text(&key, value)?;
                Ok(Pair { key, value })
            })
            .collect()
    }

    fn text(key: &str, bytes: Vec<u8>) -> Result<String> {
        String::from_utf8(bytes)
            .map_err(|_| Error::new(format!("the value of {key:?} is not UTF-8")))
    }
}

pub use crate::kv::{Contract, Pair};

#[cfg(test)]
mod tests {
    use runnel_contract::testing::{Identity, NO_ARGS, TestLedger};

    use super::{Contract, Pair};

    fn user() -> Identity {
        Identity::new("Org1", "client", "alice")
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<Pair> {
        items
            .iter()
            .map(|(key, value)| Pair {
                key: key.to_string(),
                value: value.to_string(),
            })
            .collect()
    }

    #[test]
    fn put_stores_raw_utf8_and_get_returns_it() {
        let mut ledger = TestLedger::new();
        let response = ledger
            .invoke::<Contract>(&user(), "put", &["greeting", "hello, runnel"])
            .unwrap();
        assert_eq!(response.result, b"null");
        assert_eq!(ledger.get_bytes("greeting"), Some(&b"hello, runnel"[..]));
        assert_eq!(ledger.version("greeting"), Some(1));

        let response = ledger
            .evaluate::<Contract>(&user(), "get", &["greeting"])
            .unwrap();
        assert_eq!(response.result, b"\"hello, runnel\"");
        assert_eq!(
            response.json::<Option<String>>().unwrap().as_deref(),
            Some("hello, runnel")
        );
    }

    #[test]
    fn quoted_arguments_are_json_strings() {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&user(), "put", &["\"k\"", "\"v\""])
            .unwrap();
        assert_eq!(ledger.get_bytes("k"), Some(&b"v"[..]));
        // JSON that is not a string is kept as its text.
        ledger
            .invoke::<Contract>(&user(), "put", &["n", "[1, 2]"])
            .unwrap();
        assert_eq!(ledger.get_bytes("n"), Some(&b"[1, 2]"[..]));
    }

    #[test]
    fn get_of_a_missing_key_is_null() {
        let ledger = TestLedger::new();
        let response = ledger
            .evaluate::<Contract>(&user(), "get", &["nope"])
            .unwrap();
        assert_eq!(response.result, b"null");
    }

    #[test]
    fn put_overwrites_and_bumps_the_version() {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&user(), "put", &["k", "1"])
            .unwrap();
        ledger
            .invoke::<Contract>(&user(), "put", &["other", "x"])
            .unwrap();
        ledger
            .invoke::<Contract>(&user(), "put", &["k", "2"])
            .unwrap();
        assert_eq!(ledger.get_bytes("k"), Some(&b"2"[..]));
        assert_eq!(ledger.version("k"), Some(3));
        assert_eq!(ledger.version("other"), Some(2));
    }

    #[test]
    fn update_returns_the_previous_value_and_stores_the_new_one() {
        let mut ledger = TestLedger::new();
        let first = ledger
            .invoke::<Contract>(&user(), "update", &["k", "1"])
            .unwrap();
        assert_eq!(first.result, b"null");
        let second = ledger
            .invoke::<Contract>(&user(), "update", &["k", "2"])
            .unwrap();
        assert_eq!(second.result, b"\"1\"");
        assert_eq!(ledger.get_bytes("k"), Some(&b"2"[..]));
    }

    #[test]
    fn delete_removes_and_tolerates_missing_keys() {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&user(), "put", &["k", "v"])
            .unwrap();
        ledger
            .invoke::<Contract>(&user(), "delete", &["k"])
            .unwrap();
        assert_eq!(ledger.get_bytes("k"), None);
        ledger
            .invoke::<Contract>(&user(), "delete", &["k"])
            .unwrap();
        assert!(ledger.is_empty());
    }

    #[test]
    fn range_is_half_open_and_ordered() {
        let mut ledger = TestLedger::new();
        for (key, value) in [("b", "2"), ("a", "1"), ("d", "4"), ("c", "3")] {
            ledger
                .invoke::<Contract>(&user(), "put", &[key, value])
                .unwrap();
        }
        let range = |start: &str, end: &str| {
            ledger
                .evaluate::<Contract>(&user(), "range", &[start, end])
                .unwrap()
                .json::<Vec<Pair>>()
                .unwrap()
        };
        assert_eq!(range("b", "d"), pairs(&[("b", "2"), ("c", "3")]));
        assert_eq!(
            range("", ""),
            pairs(&[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")])
        );
        assert_eq!(range("c", ""), pairs(&[("c", "3"), ("d", "4")]));
        assert_eq!(range("d", "b"), pairs(&[]));
        let response = ledger
            .evaluate::<Contract>(&user(), "range", &["x", ""])
            .unwrap();
        assert_eq!(response.result, b"[]");
    }

    #[test]
    fn range_returns_key_value_objects() {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&user(), "put", &["a", "1"])
            .unwrap();
        let response = ledger
            .evaluate::<Contract>(&user(), "range", &["", ""])
            .unwrap();
        assert_eq!(response.text(), Some(r#"[{"key":"a","value":"1"}]"#));
    }

    #[test]
    fn wrong_argument_counts_are_errors() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Contract>(&user(), "put", &["k"])
            .unwrap_err();
        assert_eq!(error.message(), "put: expected 2 arguments, got 1");
        let error = ledger
            .invoke::<Contract>(&user(), "get", NO_ARGS)
            .unwrap_err();
        assert_eq!(error.message(), "get: expected 1 argument, got 0");
        let error = ledger
            .invoke::<Contract>(&user(), "delete", &["a", "b"])
            .unwrap_err();
        assert_eq!(error.message(), "delete: expected 1 argument, got 2");
        assert!(ledger.is_empty());
    }

    #[test]
    fn bad_arguments_are_errors() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Contract>(&user(), "put", &[&b"k"[..], &[0xff, 0xfe]])
            .unwrap_err();
        assert!(
            error.message().starts_with("put: argument 2 (value): "),
            "{error}"
        );
        let error = ledger
            .invoke::<Contract>(&user(), "put", &["", "v"])
            .unwrap_err();
        assert_eq!(error.message(), "state keys must not be empty");
        let error = ledger
            .invoke::<Contract>(&user(), "get", &[""])
            .unwrap_err();
        assert_eq!(error.message(), "state keys must not be empty");
        assert!(ledger.is_empty());
    }

    #[test]
    fn non_utf8_values_are_reported_not_mangled() {
        let mut ledger = TestLedger::new();
        ledger.put_bytes("bin", [0xff]);
        let error = ledger
            .evaluate::<Contract>(&user(), "get", &["bin"])
            .unwrap_err();
        assert_eq!(error.message(), "the value of \"bin\" is not UTF-8");
        let error = ledger
            .evaluate::<Contract>(&user(), "range", &["", ""])
            .unwrap_err();
        assert_eq!(error.message(), "the value of \"bin\" is not UTF-8");
    }

    #[test]
    fn unknown_functions_are_errors() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Contract>(&user(), "Put", NO_ARGS)
            .unwrap_err();
        assert_eq!(
            error.message(),
            "unknown function \"Put\"; this contract has: put, get, update, delete, range"
        );
    }
}
