//! Every bound a contract call runs under. Each is a named value with its unit in the name;
//! exceeding one ends the call with a distinct [`LimitExceeded`](crate::LimitExceeded).

/// Fuel charged for every host call, on top of the bytes it moves.
pub const HOST_CALL_FUEL: u64 = 1_000;
/// Fuel charged per byte moved between the contract and the host (keys, values, events,
/// results, arguments).
pub const FUEL_PER_BYTE: u64 = 1;
/// Entries fetched from the state view per page of a range scan.
pub const RANGE_PAGE_KEYS: usize = 64;
/// Longest contract error message kept (longer ones are truncated).
pub const ABORT_MESSAGE_BYTES_MAX: usize = 16 * 1024;
/// The wall-clock backstop's resolution: the engine's epoch advances this often.
pub const EPOCH_TICK_MS: u64 = 5;

/// Limits applied to each call. Engine-wide limits (stack, instance pool) live in
/// [`RuntimeConfig`](crate::RuntimeConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Fuel (roughly one unit per wasm instruction, plus host-call charges) per call.
    pub fuel_per_call: u64,
    /// Linear memory a call may use, in bytes (also the pooling allocator's slot size).
    pub memory_bytes_max: usize,
    /// Elements a table may hold.
    pub table_elements_max: usize,
    /// Size of a state key, in bytes.
    pub key_bytes_max: usize,
    /// Size of a state value, in bytes.
    pub value_bytes_max: usize,
    /// Distinct keys a call may write or delete.
    pub writes_per_call_max: usize,
    /// Events a call may emit.
    pub events_per_call_max: usize,
    /// Size of one event (name + payload), in bytes.
    pub event_bytes_max: usize,
    /// Committed entries a call may visit through range scans, over all its iterators.
    pub range_scan_keys_max: usize,
    /// Range iterators a call may open.
    pub ranges_per_call_max: usize,
    /// Size of the call's result, in bytes.
    pub return_bytes_max: usize,
    /// Size of the encoded call arguments, in bytes.
    pub args_bytes_max: usize,
    /// Log output kept per call, in bytes (the rest is dropped, not an error).
    pub log_bytes_max: usize,
    /// Wall-clock backstop per call, in milliseconds. Fuel is the deterministic limit;
    /// this only stops a call that fuel somehow did not (e.g. a slow host).
    pub wall_clock_ms_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel_per_call: 50_000_000,
            memory_bytes_max: 32 << 20,
            table_elements_max: 10_000,
            key_bytes_max: 4 << 10,
            value_bytes_max: 1 << 20,
            writes_per_call_max: 10_000,
            events_per_call_max: 64,
            event_bytes_max: 64 << 10,
            range_scan_keys_max: 10_000,
            ranges_per_call_max: 64,
            return_bytes_max: 1 << 20,
            args_bytes_max: 2 << 20,
            log_bytes_max: 16 << 10,
            wall_clock_ms_max: 2_000,
        }
    }
}
