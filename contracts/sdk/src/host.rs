//! [`Host`]: the world a contract call sees, one method per ABI host function.
//!
//! In a wasm module the host is the node (through the `runnel` imports, see docs/abi.md);
//! in native unit tests it is [`testing`](crate::testing)'s in-memory ledger. Contract code
//! never uses a `Host` directly: it goes through [`Context`](crate::Context), which adds
//! typing, key checks and decoding on top.

/// An open range iterator, as numbered by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeId(pub i32);

/// The severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum LogLevel {
    /// Something failed.
    Error = 0,
    /// Something looks wrong.
    Warn = 1,
    /// Progress worth knowing.
    Info = 2,
    /// Detail for debugging.
    Debug = 3,
}

/// The host functions of ABI v1, as seen by a contract call.
///
/// Keys passed in are non-empty (the [`Context`](crate::Context) checks). Host-side
/// failures (a limit crossed, a broken invariant) end the call inside the host; they never
/// come back here, which is why the methods do not return errors.
pub trait Host {
    /// The value of `key`, or `None` if it is absent. Sees the call's own earlier writes.
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>>;
    /// Writes `key`.
    fn put(&mut self, key: &[u8], value: &[u8]);
    /// Deletes `key`.
    fn delete(&mut self, key: &[u8]);
    /// Opens an iterator over `start <= key < end` in key order (`end == None`: no upper
    /// bound), with the call's own writes merged in.
    fn range_open(&mut self, start: &[u8], end: Option<&[u8]>) -> RangeId;
    /// The next `(key, value)` of an iterator, or `None` when it is done.
    fn range_next(&mut self, range: RangeId) -> Option<(Vec<u8>, Vec<u8>)>;
    /// Emits an event, delivered if the call's transaction commits.
    fn emit(&mut self, name: &str, payload: &[u8]);
    /// The transaction id (lowercase hex).
    fn tx_id(&mut self) -> String;
    /// The submitter, encoded as the byte list `[org, role, name, certificate DER]`.
    fn creator(&mut self) -> Vec<u8>;
    /// The proposal's timestamp, Unix milliseconds.
    fn timestamp_ms(&mut self) -> u64;
    /// Writes a debug log line (not part of the call's result).
    fn log(&mut self, level: LogLevel, message: &str);
}
