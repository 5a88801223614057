//! [`Context`]: what a contract function sees of the ledger, and [`Creator`], who called.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::args::decode_byte_list;
use crate::host::{Host, LogLevel, RangeId};
use crate::key::{CompositeKey, prefix_end};
use crate::{Error, Result};

/// The submitter of the transaction, as the node authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creator {
    /// The organisation (membership service provider) that issued the identity.
    pub org: String,
    /// The role within the organisation (`admin`, `client`, `peer`, ...).
    pub role: String,
    /// The identity's name.
    pub name: String,
    /// The X.509 certificate, DER (empty when the node runs without certificates).
    pub cert: Vec<u8>,
}

impl Creator {
    /// The account id of this identity: `"{org}/{name}"`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.org, self.name)
    }

    /// Decodes the byte list `[org, role, name, certificate DER]` of docs/abi.md.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let items =
            decode_byte_list(bytes).map_err(|e| Error::new(format!("creator identity: {e}")))?;
        let [org, role, name, cert]: [Vec<u8>; 4] = items.try_into().map_err(|items: Vec<_>| {
            Error::new(format!(
                "creator identity: expected 4 items, got {}",
                items.len()
            ))
        })?;
        let text = |bytes: Vec<u8>, what: &str| {
            String::from_utf8(bytes)
                .map_err(|_| Error::new(format!("creator identity: {what} is not UTF-8")))
        };
        Ok(Creator {
            org: text(org, "org")?,
            role: text(role, "role")?,
            name: text(name, "name")?,
            cert,
        })
    }
}

/// The first parameter of every contract function: state, events and the transaction's
/// context, for the duration of one call.
///
/// Keys are byte strings (`&str`, `String`, `&[u8]`, [`CompositeKey`] all work) and must
/// not be empty. Typed values are stored as JSON; `*_bytes` methods store bytes as given.
pub struct Context<'h> {
    host: &'h mut dyn Host,
    creator: Option<Creator>,
}

impl<'h> Context<'h> {
    /// A context on `host`. The SDK makes one per call; tests use
    /// [`testing::TestLedger`](crate::testing::TestLedger) instead.
    pub fn new(host: &'h mut dyn Host) -> Self {
        Context {
            host,
            creator: None,
        }
    }

    /// The value of `key` decoded from JSON, or `None` if the key is absent.
    pub fn get<T: DeserializeOwned>(&mut self, key: impl AsRef<[u8]>) -> Result<Option<T>> {
        let key = key.as_ref();
        match self.get_bytes(key)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                Error::new(format!(
                    "the value of key {} is not the expected JSON: {e}",
                    show_key(key)
                ))
            }),
        }
    }

    /// Stores `value` as JSON under `key`.
    pub fn put<T: Serialize + ?Sized>(&mut self, key: impl AsRef<[u8]>, value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value)?;
        self.put_bytes(key, bytes)
    }

    /// The bytes stored under `key`, or `None` if the key is absent.
    pub fn get_bytes(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = checked_key(key.as_ref())?;
        Ok(self.host.get(key))
    }

    /// Stores `value` under `key` as given.
    pub fn put_bytes(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let key = checked_key(key.as_ref())?;
        self.host.put(key, value.as_ref());
        Ok(())
    }

    /// Whether `key` holds a value.
    pub fn exists(&mut self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.get_bytes(key)?.is_some())
    }

    /// Deletes `key` (deleting an absent key is not an error).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        let key = checked_key(key.as_ref())?;
        self.host.delete(key);
        Ok(())
    }

    /// The entries with `start <= key < end`, in key order; an empty `end` means no upper
    /// bound. Entries are fetched from the host one at a time as the iterator advances,
    /// and include this call's own earlier writes.
    ///
    /// The iterator borrows the context; collect it first to write while going through
    /// the results.
    pub fn range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<Range<'_>> {
        let end = end.as_ref();
        let end = (!end.is_empty()).then_some(end);
        Ok(self.open(start.as_ref(), end))
    }

    /// The entries whose key starts with `prefix`, in key order (every entry if `prefix` is
    /// empty).
    pub fn prefix(&mut self, prefix: impl AsRef<[u8]>) -> Result<Range<'_>> {
        let prefix = prefix.as_ref();
        let end = prefix_end(prefix);
        Ok(self.open(prefix, end.as_deref()))
    }

    /// The entries under composite keys of `object_type` whose attributes start with
    /// `attributes`, in key order (Fabric's `GetStateByPartialCompositeKey`). Split a key
    /// with [`CompositeKey::split`].
    pub fn by_partial_composite_key<S: AsRef<str>>(
        &mut self,
        object_type: &str,
        attributes: &[S],
    ) -> Result<Range<'_>> {
        let prefix = CompositeKey::partial(object_type, attributes)?;
        self.prefix(prefix.as_bytes())
    }

    fn open(&mut self, start: &[u8], end: Option<&[u8]>) -> Range<'_> {
        let id = self.host.range_open(start, end);
        Range {
            host: &mut *self.host,
            id,
            done: false,
        }
    }

    /// Emits event `name` with `payload` as JSON. Events reach subscribers only if the
    /// transaction commits.
    pub fn emit<T: Serialize + ?Sized>(&mut self, name: &str, payload: &T) -> Result<()> {
        let bytes = serde_json::to_vec(payload)?;
        self.emit_bytes(name, bytes)
    }

    /// Emits event `name` with `payload` as given.
    pub fn emit_bytes(&mut self, name: &str, payload: impl AsRef<[u8]>) -> Result<()> {
        if name.is_empty() {
            return Err(Error::new("event names must not be empty"));
        }
        self.host.emit(name, payload.as_ref());
        Ok(())
    }

    /// The transaction's id (lowercase hex).
    pub fn tx_id(&mut self) -> String {
        self.host.tx_id()
    }

    /// Who submitted the transaction.
    pub fn creator(&mut self) -> Result<Creator> {
        if let Some(creator) = &self.creator {
            return Ok(creator.clone());
        }
        let creator = Creator::decode(&self.host.creator())?;
        self.creator = Some(creator.clone());
        Ok(creator)
    }

    /// The proposal's timestamp in Unix milliseconds: the only clock a contract has, and
    /// the same on every endorser.
    pub fn timestamp_ms(&mut self) -> u64 {
        self.host.timestamp_ms()
    }

    /// Writes a log line for the node operator (not part of the result, not on the ledger).
    pub fn log(&mut self, level: LogLevel, message: impl AsRef<str>) {
        self.host.log(level, message.as_ref());
    }
}

fn checked_key(key: &[u8]) -> Result<&[u8]> {
    if key.is_empty() {
        return Err(Error::new("state keys must not be empty"));
    }
    Ok(key)
}

/// A key for an error message: text if it is UTF-8, with `\0` and other controls escaped.
fn show_key(key: &[u8]) -> String {
    match core::str::from_utf8(key) {
        Ok(text) => format!("{:?}", text),
        Err(_) => format!("{key:?}"),
    }
}

/// Iterator over state entries `(key, value)`, fetched from the host as it advances
/// (see [`Context::range`]).
pub struct Range<'c> {
    host: &'c mut dyn Host,
    id: RangeId,
    done: bool,
}

impl<'c> Range<'c> {
    /// The same entries with values decoded from JSON.
    pub fn json<T: DeserializeOwned>(self) -> impl Iterator<Item = Result<(Vec<u8>, T)>> + 'c {
        self.map(|(key, value)| match serde_json::from_slice(&value) {
            Ok(value) => Ok((key, value)),
            Err(e) => Err(Error::new(format!(
                "the value of key {} is not the expected JSON: {e}",
                show_key(&key)
            ))),
        })
    }
}

impl Iterator for Range<'_> {
    type Item = (Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let entry = self.host.range_next(self.id);
        self.done = entry.is_none();
        entry
    }
}
