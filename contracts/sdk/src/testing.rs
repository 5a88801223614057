//! A native test harness: run contract functions against an in-memory ledger, without
//! wasm or a node. Native builds only.
//!
//! [`TestLedger`] holds state (each key with the sequence number of the invoke that wrote
//! it) and the events of committed invokes. [`TestLedger::invoke`] runs one function as one
//! transaction: its writes and events are applied together if it returns `Ok`, and
//! discarded if it returns an error or panics. [`TestLedger::evaluate`] runs a function and
//! keeps nothing, like a query.
//!
//! Inside a call, state behaves as on the node: reads see the call's own earlier writes,
//! and a range iterator sees committed entries merged with the writes the call made before
//! opening it. Limits (key and value sizes, fuel, ...) are the runtime's and are not
//! applied here.
//!
//! ```
//! #[runnel_contract::contract]
//! pub mod counter {
//!     use runnel_contract::prelude::*;
//!
//!     pub fn add(ctx: &mut Context, n: u64) -> Result<u64> {
//!         let total = ctx.get::<u64>("total")?.unwrap_or(0) + n;
//!         ctx.put("total", &total)?;
//!         ctx.emit("Added", &n)?;
//!         Ok(total)
//!     }
//! }
//!
//! use runnel_contract::testing::{Identity, NO_ARGS, TestLedger};
//!
//! let mut ledger = TestLedger::new();
//! let alice = Identity::new("Org1", "client", "alice");
//! let response = ledger.invoke::<counter::Contract>(&alice, "add", &["5"]).unwrap();
//! assert_eq!(response.json::<u64>().unwrap(), 5);
//! assert_eq!(response.events[0].name, "Added");
//! assert_eq!(ledger.get_json::<u64>("total"), Some(5));
//! assert_eq!(ledger.version("total"), Some(1));
//!
//! let error = ledger.invoke::<counter::Contract>(&alice, "add", NO_ARGS).unwrap_err();
//! assert_eq!(error.message(), "add: expected 1 argument, got 0");
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::args::encode_byte_list;
use crate::host::{Host, LogLevel, RangeId};
use crate::{Context, Contract, Creator, Error, Result};

/// No arguments, for functions that take none: `ledger.invoke::<C>(&id, "f", NO_ARGS)`.
pub const NO_ARGS: &[&[u8]] = &[];

/// The timestamp calls see until [`TestLedger::set_timestamp_ms`] changes it
/// (2023-11-14T22:13:20Z).
pub const DEFAULT_TIMESTAMP_MS: u64 = 1_700_000_000_000;

/// An identity to call contracts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    creator: Creator,
}

impl Identity {
    /// `name`, with `role` in `org`, and no certificate.
    pub fn new(org: &str, role: &str, name: &str) -> Self {
        Identity {
            creator: Creator {
                org: org.to_string(),
                role: role.to_string(),
                name: name.to_string(),
                cert: Vec::new(),
            },
        }
    }

    /// The same identity with certificate `cert` (DER).
    pub fn with_cert(mut self, cert: impl Into<Vec<u8>>) -> Self {
        self.creator.cert = cert.into();
        self
    }

    /// The account id a contract sees: `"{org}/{name}"`.
    pub fn id(&self) -> String {
        self.creator.id()
    }

    /// The identity as a contract sees it.
    pub fn creator(&self) -> &Creator {
        &self.creator
    }

    fn encode(&self) -> Vec<u8> {
        let c = &self.creator;
        encode_byte_list(&[
            c.org.as_bytes(),
            c.role.as_bytes(),
            c.name.as_bytes(),
            &c.cert,
        ])
    }
}

/// An event a call emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event's name.
    pub name: String,
    /// The payload, as emitted (JSON for [`Context::emit`]).
    pub payload: Vec<u8>,
}

impl Event {
    /// The payload decoded from JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_slice(&self.payload)?)
    }
}

/// A log line a call wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its severity.
    pub level: LogLevel,
    /// Its text.
    pub message: String,
}

/// What a successful call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The result bytes, as a client receives them (JSON of the return value).
    pub result: Vec<u8>,
    /// The events the call emitted, in order.
    pub events: Vec<Event>,
    /// The log lines the call wrote.
    pub logs: Vec<LogLine>,
    /// The transaction id the call saw.
    pub tx_id: String,
    /// For an invoke, the sequence number it committed at (the version of the keys it
    /// wrote); `None` for an evaluate.
    pub seq: Option<u64>,
}

impl Response {
    /// The result decoded from JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_slice(&self.result)?)
    }

    /// The result as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        core::str::from_utf8(&self.result).ok()
    }
}

/// A call's writes: `None` deletes.
type Writes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

#[derive(Debug, Clone)]
struct Entry {
    value: Vec<u8>,
    version: u64,
}

/// An in-memory ledger for one contract's state (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct TestLedger {
    state: BTreeMap<Vec<u8>, Entry>,
    seq: u64,
    events: Vec<Event>,
    tx_id: Option<String>,
    timestamp_ms: u64,
}

impl Default for TestLedger {
    fn default() -> Self {
        Self::new()
    }
}

impl TestLedger {
    /// An empty ledger at sequence number 0.
    pub fn new() -> Self {
        TestLedger {
            state: BTreeMap::new(),
            seq: 0,
            events: Vec::new(),
            tx_id: None,
            timestamp_ms: DEFAULT_TIMESTAMP_MS,
        }
    }

    /// Runs `function` of contract `C` as `identity` with `args` (each as bytes; `&str`
    /// works) as one transaction. On `Ok`, its writes and events are committed at the next
    /// sequence number; on an error or a panic, nothing is kept and the error is returned
    /// (a panic as `panicked: <message>`).
    pub fn invoke<C: Contract>(
        &mut self,
        identity: &Identity,
        function: &str,
        args: &[impl AsRef<[u8]>],
    ) -> Result<Response> {
        let (mut response, writes) = self.run::<C>(identity, function, args)?;
        self.seq += 1;
        for (key, value) in writes {
            match value {
                Some(value) => {
                    self.state.insert(
                        key,
                        Entry {
                            value,
                            version: self.seq,
                        },
                    );
                }
                None => {
                    self.state.remove(&key);
                }
            }
        }
        self.events.extend(response.events.iter().cloned());
        response.seq = Some(self.seq);
        Ok(response)
    }

    /// Runs `function` like [`invoke`](Self::invoke), but keeps none of its writes or
    /// events (a query).
    pub fn evaluate<C: Contract>(
        &self,
        identity: &Identity,
        function: &str,
        args: &[impl AsRef<[u8]>],
    ) -> Result<Response> {
        self.run::<C>(identity, function, args)
            .map(|(response, _)| response)
    }

    fn run<C: Contract>(
        &self,
        identity: &Identity,
        function: &str,
        args: &[impl AsRef<[u8]>],
    ) -> Result<(Response, Writes)> {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_ref().to_vec()).collect();
        let tx_id = self
            .tx_id
            .clone()
            .unwrap_or_else(|| format!("{:064x}", self.seq + 1));
        let mut host = TxHost {
            state: &self.state,
            writes: BTreeMap::new(),
            ranges: Vec::new(),
            events: Vec::new(),
            logs: Vec::new(),
            tx_id: tx_id.clone(),
            creator: identity.encode(),
            timestamp_ms: self.timestamp_ms,
        };
        let outcome = {
            let mut ctx = Context::new(&mut host);
            catch_unwind(AssertUnwindSafe(|| C::dispatch(&mut ctx, function, &args)))
        };
        let result = match outcome {
            Ok(result) => result?,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "Box<dyn Any>".to_string());
                return Err(Error::new(format!("panicked: {message}")));
            }
        };
        let response = Response {
            result,
            events: host.events,
            logs: host.logs,
            tx_id,
            seq: None,
        };
        Ok((response, host.writes))
    }

    /// Sets the transaction id every later call sees (by default, the next sequence
    /// number as 64 hex digits).
    pub fn set_tx_id(&mut self, tx_id: impl Into<String>) -> &mut Self {
        self.tx_id = Some(tx_id.into());
        self
    }

    /// Sets the timestamp later calls see, Unix milliseconds.
    pub fn set_timestamp_ms(&mut self, timestamp_ms: u64) -> &mut Self {
        self.timestamp_ms = timestamp_ms;
        self
    }

    /// Moves the clock calls see forward by `ms`.
    pub fn advance_time_ms(&mut self, ms: u64) -> &mut Self {
        self.timestamp_ms = self.timestamp_ms.saturating_add(ms);
        self
    }

    /// The timestamp calls see, Unix milliseconds.
    pub fn timestamp_ms(&self) -> u64 {
        self.timestamp_ms
    }

    /// The sequence number of the last commit (0 for a new ledger).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The bytes stored under `key`.
    pub fn get_bytes(&self, key: impl AsRef<[u8]>) -> Option<&[u8]> {
        self.state.get(key.as_ref()).map(|e| e.value.as_slice())
    }

    /// The value under `key` decoded from JSON; `None` if absent or not that JSON.
    pub fn get_json<T: DeserializeOwned>(&self, key: impl AsRef<[u8]>) -> Option<T> {
        self.get_bytes(key)
            .and_then(|bytes| serde_json::from_slice(bytes).ok())
    }

    /// The version of `key`: the sequence number of the commit that last wrote it.
    pub fn version(&self, key: impl AsRef<[u8]>) -> Option<u64> {
        self.state.get(key.as_ref()).map(|e| e.version)
    }

    /// Every entry, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.state
            .iter()
            .map(|(k, e)| (k.as_slice(), e.value.as_slice()))
    }

    /// How many keys hold a value.
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// Whether the state is empty.
    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }

    /// Writes `key` directly, as a commit of its own (to set up a test).
    pub fn put_bytes(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.seq += 1;
        let entry = Entry {
            value: value.as_ref().to_vec(),
            version: self.seq,
        };
        self.state.insert(key.as_ref().to_vec(), entry);
        self
    }

    /// Writes `value` as JSON under `key`, as a commit of its own (to set up a test).
    pub fn put_json<T: Serialize + ?Sized>(
        &mut self,
        key: impl AsRef<[u8]>,
        value: &T,
    ) -> Result<&mut Self> {
        let bytes = serde_json::to_vec(value)?;
        Ok(self.put_bytes(key, bytes))
    }

    /// The events of every committed invoke, in commit order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }
}

/// The host one call runs on: committed state plus the call's own writes.
struct TxHost<'a> {
    state: &'a BTreeMap<Vec<u8>, Entry>,
    writes: Writes,
    ranges: Vec<VecDeque<(Vec<u8>, Vec<u8>)>>,
    events: Vec<Event>,
    logs: Vec<LogLine>,
    tx_id: String,
    creator: Vec<u8>,
    timestamp_ms: u64,
}

impl Host for TxHost<'_> {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        match self.writes.get(key) {
            Some(own) => own.clone(),
            None => self.state.get(key).map(|e| e.value.clone()),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.writes.insert(key.to_vec(), Some(value.to_vec()));
    }

    fn delete(&mut self, key: &[u8]) {
        self.writes.insert(key.to_vec(), None);
    }

    fn range_open(&mut self, start: &[u8], end: Option<&[u8]>) -> RangeId {
        let bounds = (
            Bound::Included(start),
            end.map_or(Bound::Unbounded, Bound::Excluded),
        );
        let empty = end.is_some_and(|end| end <= start);
        let mut merged = Writes::new();
        if !empty {
            for (key, entry) in self.state.range::<[u8], _>(bounds) {
                merged.insert(key.clone(), Some(entry.value.clone()));
            }
            // The call's writes so far shadow committed values; a delete hides one.
            for (key, value) in self.writes.range::<[u8], _>(bounds) {
                merged.insert(key.clone(), value.clone());
            }
        }
        let entries = merged
            .into_iter()
            .filter_map(|(key, value)| value.map(|v| (key, v)))
            .collect();
        self.ranges.push(entries);
        RangeId((self.ranges.len() - 1) as i32)
    }

    fn range_next(&mut self, range: RangeId) -> Option<(Vec<u8>, Vec<u8>)> {
        let index = usize::try_from(range.0).ok()?;
        self.ranges.get_mut(index)?.pop_front()
    }

    fn emit(&mut self, name: &str, payload: &[u8]) {
        self.events.push(Event {
            name: name.to_string(),
            payload: payload.to_vec(),
        });
    }

    fn tx_id(&mut self) -> String {
        self.tx_id.clone()
    }

    fn creator(&mut self) -> Vec<u8> {
        self.creator.clone()
    }

    fn timestamp_ms(&mut self) -> u64 {
        self.timestamp_ms
    }

    fn log(&mut self, level: LogLevel, message: &str) {
        self.logs.push(LogLine {
            level,
            message: message.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[crate::contract]
    pub mod probe {
        use crate::prelude::*;

        /// Writes `key`, then fails if `fail` is set: nothing may survive.
        pub fn write(ctx: &mut Context, key: String, fail: bool) -> Result<()> {
            ctx.put_bytes(&key, "v")?;
            ctx.emit("Wrote", &key)?;
            ensure!(!fail, "failing after writing {key}");
            Ok(())
        }

        pub fn explode(ctx: &mut Context) -> Result<()> {
            ctx.put_bytes("exploded", "v")?;
            panic!("kaboom");
        }

        /// Writes inside and outside the prefix, deletes one key, then lists the prefix.
        pub fn scan(ctx: &mut Context, prefix: String) -> Result<Vec<(String, String)>> {
            ctx.put_bytes(format!("{prefix}new"), "own")?;
            ctx.put_bytes(format!("{prefix}b"), "shadowed")?;
            ctx.delete(format!("{prefix}c"))?;
            let entries = ctx
                .prefix(&prefix)?
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&v).into_owned(),
                    )
                })
                .collect();
            Ok(entries)
        }

        /// Reads a key after writing it in the same call.
        pub fn read_own(ctx: &mut Context) -> Result<Option<u32>> {
            ctx.put("mine", &7u32)?;
            ctx.get("mine")
        }

        pub fn by_owner(ctx: &mut Context, owner: String) -> Result<Vec<String>> {
            let mut ids = Vec::new();
            for entry in ctx
                .by_partial_composite_key("owned", &[owner])?
                .json::<u8>()
            {
                let (key, _) = entry?;
                let (_, attributes) = CompositeKey::split(&key)?;
                ids.push(attributes.join("/"));
            }
            Ok(ids)
        }

        pub fn seed(ctx: &mut Context) -> Result<()> {
            for (owner, id) in [("ann", "1"), ("ann", "2"), ("annie", "3"), ("bob", "4")] {
                ctx.put(CompositeKey::new("owned", &[owner, id])?, &1u8)?;
            }
            Ok(())
        }

        pub fn context(ctx: &mut Context) -> Result<(String, String, String, u64, Vec<u8>)> {
            ctx.log(LogLevel::Debug, "looking");
            let creator = ctx.creator()?;
            Ok((
                ctx.tx_id(),
                creator.id(),
                creator.role,
                ctx.timestamp_ms(),
                creator.cert,
            ))
        }
    }

    use probe::Contract as Probe;

    fn alice() -> Identity {
        Identity::new("Org1", "client", "alice")
    }

    #[test]
    fn failed_invokes_keep_nothing() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Probe>(&alice(), "write", &["k", "true"])
            .unwrap_err();
        assert_eq!(error.message(), "failing after writing k");
        assert!(ledger.is_empty());
        assert!(ledger.events().is_empty());
        assert_eq!(ledger.seq(), 0);

        let response = ledger
            .invoke::<Probe>(&alice(), "write", &["k", "false"])
            .unwrap();
        assert_eq!(response.seq, Some(1));
        assert_eq!(ledger.get_bytes("k"), Some(&b"v"[..]));
        assert_eq!(
            ledger.events(),
            &[Event {
                name: "Wrote".into(),
                payload: b"\"k\"".to_vec()
            }]
        );
    }

    #[test]
    fn panics_become_errors_and_keep_nothing() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Probe>(&alice(), "explode", NO_ARGS)
            .unwrap_err();
        assert_eq!(error.message(), "panicked: kaboom");
        assert!(ledger.is_empty());
    }

    #[test]
    fn evaluate_keeps_nothing() {
        let ledger = TestLedger::new();
        let response = ledger
            .evaluate::<Probe>(&alice(), "write", &["k", "false"])
            .unwrap();
        assert_eq!(response.seq, None);
        assert_eq!(response.events.len(), 1);
        assert!(ledger.is_empty());
        assert!(ledger.events().is_empty());
    }

    #[test]
    fn ranges_merge_the_calls_own_writes() {
        let mut ledger = TestLedger::new();
        ledger
            .put_bytes("p/a", "1")
            .put_bytes("p/b", "2")
            .put_bytes("p/c", "3");
        ledger
            .put_bytes("q", "outside")
            .put_bytes("p", "prefix itself");
        let entries: Vec<(String, String)> = ledger
            .evaluate::<Probe>(&alice(), "scan", &["p/"])
            .unwrap()
            .json()
            .unwrap();
        let expected = [("p/a", "1"), ("p/b", "shadowed"), ("p/new", "own")]
            .map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(entries, expected);
    }

    #[test]
    fn reads_see_the_calls_own_writes() {
        let mut ledger = TestLedger::new();
        let response = ledger
            .invoke::<Probe>(&alice(), "read_own", NO_ARGS)
            .unwrap();
        assert_eq!(response.json::<Option<u32>>().unwrap(), Some(7));
    }

    #[test]
    fn partial_composite_keys_select_whole_attributes() {
        let mut ledger = TestLedger::new();
        ledger.invoke::<Probe>(&alice(), "seed", NO_ARGS).unwrap();
        let ids = |owner: &str| -> Vec<String> {
            ledger
                .evaluate::<Probe>(&alice(), "by_owner", &[owner])
                .unwrap()
                .json()
                .unwrap()
        };
        assert_eq!(ids("ann"), ["ann/1", "ann/2"]);
        assert_eq!(ids("bob"), ["bob/4"]);
        assert!(ids("carol").is_empty());
    }

    #[test]
    fn context_reports_identity_tx_id_and_time() {
        let mut ledger = TestLedger::new();
        let bob = Identity::new("Org2", "admin", "bob").with_cert(vec![0x30, 0x82]);
        assert_eq!(bob.id(), "Org2/bob");
        let response = ledger.evaluate::<Probe>(&bob, "context", NO_ARGS).unwrap();
        let (tx_id, id, role, timestamp, cert): (String, String, String, u64, Vec<u8>) =
            response.json().unwrap();
        assert_eq!(tx_id, format!("{:064x}", 1));
        assert_eq!(response.tx_id, tx_id);
        assert_eq!((id.as_str(), role.as_str()), ("Org2/bob", "admin"));
        assert_eq!(timestamp, DEFAULT_TIMESTAMP_MS);
        assert_eq!(cert, [0x30, 0x82]);
        assert_eq!(
            response.logs,
            [LogLine {
                level: LogLevel::Debug,
                message: "looking".into()
            }]
        );

        ledger
            .set_tx_id("abc123")
            .set_timestamp_ms(5)
            .advance_time_ms(10);
        let (tx_id, _, _, timestamp, _): (String, String, String, u64, Vec<u8>) = ledger
            .invoke::<Probe>(&bob, "context", NO_ARGS)
            .unwrap()
            .json()
            .unwrap();
        assert_eq!((tx_id.as_str(), timestamp), ("abc123", 15));
        assert_eq!(ledger.timestamp_ms(), 15);
    }

    #[test]
    fn functions_are_listed_in_declaration_order() {
        assert_eq!(
            <Probe as Contract>::FUNCTIONS,
            [
                "write", "explode", "scan", "read_own", "by_owner", "seed", "context"
            ]
        );
    }

    #[crate::contract]
    pub mod empty {}

    #[test]
    fn a_contract_may_have_no_functions() {
        assert!(<empty::Contract as Contract>::FUNCTIONS.is_empty());
        let error = TestLedger::new()
            .evaluate::<empty::Contract>(&alice(), "f", NO_ARGS)
            .unwrap_err();
        assert_eq!(
            error.message(),
            "unknown function \"f\"; this contract has no functions"
        );
    }

    #[test]
    fn seeding_helpers_bump_versions() {
        let mut ledger = TestLedger::new();
        ledger.put_json("n", &5u8).unwrap().put_bytes("m", "x");
        assert_eq!(ledger.get_json::<u8>("n"), Some(5));
        assert_eq!(ledger.version("n"), Some(1));
        assert_eq!(ledger.version("m"), Some(2));
        assert_eq!(ledger.entries().count(), 2);
        assert_eq!(ledger.len(), 2);
    }

    #[test]
    fn creator_decoding_rejects_malformed_lists() {
        assert!(Creator::decode(&encode_byte_list(&["a", "b", "c"])).is_err());
        assert!(Creator::decode(&encode_byte_list(&[&b"a"[..], b"b", &[0xff], b""])).is_err());
        assert!(Creator::decode(&[1, 0]).is_err());
        let creator = Creator::decode(&encode_byte_list(&["Org1", "peer", "p0", ""])).unwrap();
        assert_eq!(creator.id(), "Org1/p0");
    }
}
