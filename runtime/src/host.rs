//! The host side of a call: the `runnel` import module. `Simulator` records everything a
//! call reads and writes so that it can be validated later (the read/write set).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use wasmtime::{Caller, Linker, Memory, ResourceLimiter};

use crate::limits::{
    ABORT_MESSAGE_BYTES_MAX, FUEL_PER_BYTE, HOST_CALL_FUEL, Limits, RANGE_PAGE_KEYS,
};
use crate::proto::{ContractEvent, KvRead, KvWrite, NsRwSet, RangeRead, Version};
use crate::{LimitExceeded, StateError, StateView, VersionedValue};

/// Why a host function ended the call. Carried through wasmtime as the trap's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HostTrap {
    #[error("contract aborted: {0}")]
    Abort(String),
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("ABI violation: {0}")]
    Abi(String),
}

fn abi(message: impl Into<String>) -> HostTrap {
    HostTrap::Abi(message.into())
}

/// A log line written by a contract (not part of the deterministic outcome).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// 0 error, 1 warn, 2 info, 3 debug.
    pub level: u8,
    /// The text.
    pub message: String,
}

/// Memory and table bounds for one store.
pub(crate) struct StoreLimiter {
    memory_bytes_max: usize,
    table_elements_max: usize,
}

impl ResourceLimiter for StoreLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes_max {
            return Err(HostTrap::Limit(LimitExceeded::Memory {
                requested_bytes: desired,
                limit_bytes: self.memory_bytes_max,
            })
            .into());
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements_max {
            return Err(HostTrap::Limit(LimitExceeded::Table {
                requested: desired,
                limit: self.table_elements_max,
            })
            .into());
        }
        Ok(true)
    }
}

/// An open range iterator: committed entries from the view, paged, merged with the
/// call's own writes (snapshotted when the iterator was opened).
struct RangeIter {
    end: Option<Vec<u8>>,
    /// Page of committed entries not yet consumed.
    page: VecDeque<(Vec<u8>, VersionedValue)>,
    /// Where the next page starts (inclusive).
    next_start: Vec<u8>,
    view_done: bool,
    /// The call's own writes inside the range, in key order.
    own: VecDeque<(Vec<u8>, Option<Vec<u8>>)>,
    /// Index of this iterator's record in `Simulator::range_reads`.
    record: usize,
    done: bool,
}

/// Per-call state: the view, the read/write set being built, and the call's outputs.
pub(crate) struct Simulator {
    view: Arc<dyn StateView>,
    limits: Limits,
    namespace: String,
    tx_id: Vec<u8>,
    creator: Vec<u8>,
    timestamp_ms: u64,
    pub(crate) memory: Option<Memory>,
    pub(crate) limiter: StoreLimiter,
    /// The pending result buffer (`result_read`).
    buffer: Vec<u8>,
    reads: BTreeMap<Vec<u8>, Option<Version>>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    range_reads: Vec<RangeRead>,
    iters: Vec<RangeIter>,
    range_keys_seen: usize,
    /// Bytes of keys and values range pages read from the view and not yet charged.
    fetched_bytes: usize,
    events: Vec<ContractEvent>,
    result: Option<Vec<u8>>,
    logs: Vec<LogLine>,
    log_bytes: usize,
}

/// What a finished call leaves behind.
pub(crate) struct Outcome {
    pub result: Vec<u8>,
    pub rwset: NsRwSet,
    pub events: Vec<ContractEvent>,
    pub logs: Vec<LogLine>,
}

impl Simulator {
    pub(crate) fn new(
        view: Arc<dyn StateView>,
        limits: &Limits,
        namespace: &str,
        ctx: &crate::CallContext,
    ) -> Self {
        let creator = crate::abi::encode_byte_list(&[
            ctx.creator.org.as_bytes(),
            ctx.creator.role.as_bytes(),
            ctx.creator.name.as_bytes(),
            &ctx.creator.cert,
        ]);
        Simulator {
            view,
            limits: limits.clone(),
            namespace: namespace.to_string(),
            tx_id: ctx.tx_id.as_bytes().to_vec(),
            creator,
            timestamp_ms: ctx.timestamp_ms,
            memory: None,
            limiter: StoreLimiter {
                memory_bytes_max: limits.memory_bytes_max,
                table_elements_max: limits.table_elements_max,
            },
            buffer: Vec::new(),
            reads: BTreeMap::new(),
            writes: BTreeMap::new(),
            range_reads: Vec::new(),
            iters: Vec::new(),
            range_keys_seen: 0,
            fetched_bytes: 0,
            events: Vec::new(),
            result: None,
            logs: Vec::new(),
            log_bytes: 0,
        }
    }

    pub(crate) fn finish(self) -> Outcome {
        let reads = self
            .reads
            .into_iter()
            .map(|(key, version)| KvRead { key, version })
            .collect();
        let writes = self
            .writes
            .into_iter()
            .map(|(key, value)| KvWrite {
                key,
                is_delete: value.is_none(),
                value: value.unwrap_or_default(),
            })
            .collect();
        Outcome {
            result: self.result.unwrap_or_default(),
            rwset: NsRwSet {
                namespace: self.namespace,
                reads,
                range_reads: self.range_reads,
                writes,
            },
            events: self.events,
            logs: self.logs,
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<(), HostTrap> {
        if key.is_empty() {
            return Err(abi("state keys must not be empty"));
        }
        self.check_key_len(key.len())
    }

    fn check_key_len(&self, len: usize) -> Result<(), HostTrap> {
        if len > self.limits.key_bytes_max {
            return Err(LimitExceeded::KeySize {
                size_bytes: len,
                limit_bytes: self.limits.key_bytes_max,
            }
            .into());
        }
        Ok(())
    }

    fn check_value_len(&self, len: usize) -> Result<(), HostTrap> {
        if len > self.limits.value_bytes_max {
            return Err(LimitExceeded::ValueSize {
                size_bytes: len,
                limit_bytes: self.limits.value_bytes_max,
            }
            .into());
        }
        Ok(())
    }

    /// Puts `bytes` in the result buffer and returns their length for the guest.
    fn stage(&mut self, bytes: Vec<u8>) -> i64 {
        let len = bytes.len() as i64;
        self.buffer = bytes;
        len
    }

    fn get(&mut self, key: Vec<u8>) -> Result<i64, HostTrap> {
        self.check_key(&key)?;
        if let Some(own) = self.writes.get(&key) {
            return Ok(match own.clone() {
                Some(value) => self.stage(value),
                None => -1,
            });
        }
        let found = self.view.get(&key)?;
        self.reads
            .entry(key)
            .or_insert_with(|| found.as_ref().map(|v| v.version));
        Ok(match found {
            Some(v) => self.stage(v.value),
            None => -1,
        })
    }

    fn put(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) -> Result<(), HostTrap> {
        self.check_key(&key)?;
        if let Some(value) = &value {
            self.check_value_len(value.len())?;
        }
        if !self.writes.contains_key(&key) && self.writes.len() >= self.limits.writes_per_call_max {
            return Err(LimitExceeded::Writes {
                limit: self.limits.writes_per_call_max,
            }
            .into());
        }
        self.writes.insert(key, value);
        Ok(())
    }

    fn range_open(&mut self, start: Vec<u8>, end: Option<Vec<u8>>) -> Result<i32, HostTrap> {
        if self.iters.len() >= self.limits.ranges_per_call_max {
            return Err(LimitExceeded::Ranges {
                limit: self.limits.ranges_per_call_max,
            }
            .into());
        }
        self.check_key_len(start.len())?;
        if let Some(end) = &end {
            self.check_key(end)?;
        }
        let upper = match &end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        let own = if end.as_deref().is_some_and(|e| e <= start.as_slice()) {
            VecDeque::new()
        } else {
            self.writes
                .range::<[u8], _>((Bound::Included(start.as_slice()), upper))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        self.range_reads.push(RangeRead {
            start: start.clone(),
            end: end.clone(),
            exhausted: false,
            reads: Vec::new(),
            last: None,
        });
        self.iters.push(RangeIter {
            end,
            page: VecDeque::new(),
            next_start: start,
            view_done: false,
            own,
            record: self.range_reads.len() - 1,
            done: false,
        });
        Ok((self.iters.len() - 1) as i32)
    }

    fn refill(&mut self, handle: usize) -> Result<(), HostTrap> {
        let budget = self
            .limits
            .range_scan_keys_max
            .saturating_sub(self.range_keys_seen);
        let iter = &mut self.iters[handle];
        if !iter.page.is_empty() || iter.view_done {
            return Ok(());
        }
        // One more than the budget, so that running over it is detected, not hidden.
        let limit = RANGE_PAGE_KEYS.min(budget + 1);
        let page = self
            .view
            .scan(&iter.next_start, iter.end.as_deref(), limit)?;
        if page.len() < limit {
            iter.view_done = true;
        }
        // What the host moved is paid for, not only what the contract takes: a page holds
        // up to RANGE_PAGE_KEYS entries of up to `value_bytes_max` each.
        self.fetched_bytes += page
            .iter()
            .map(|(key, value)| key.len() + value.value.len())
            .sum::<usize>();
        if let Some((last, _)) = page.last() {
            // The smallest key after `last`.
            let mut next = last.clone();
            next.push(0);
            iter.next_start = next;
        }
        iter.page.extend(page);
        Ok(())
    }

    /// The bytes range pages read from the view since last asked, to be charged.
    fn take_fetched_bytes(&mut self) -> usize {
        std::mem::take(&mut self.fetched_bytes)
    }

    fn range_next(&mut self, handle: i32) -> Result<i64, HostTrap> {
        let handle = usize::try_from(handle)
            .ok()
            .filter(|h| *h < self.iters.len())
            .ok_or_else(|| abi(format!("range_next on unknown iterator handle {handle}")))?;
        loop {
            if self.iters[handle].done {
                return Ok(-1);
            }
            self.refill(handle)?;
            let iter = &mut self.iters[handle];
            let committed = iter.page.front().map(|(k, _)| k.as_slice());
            let own = iter.own.front().map(|(k, _)| k.as_slice());
            let (take_committed, take_own) = match (committed, own) {
                (None, None) => {
                    iter.done = true;
                    self.range_reads[iter.record].exhausted = true;
                    return Ok(-1);
                }
                (Some(_), None) => (true, false),
                (None, Some(_)) => (false, true),
                (Some(c), Some(o)) => (c <= o, o <= c),
            };
            let mut entry: Option<(Vec<u8>, Vec<u8>)> = None;
            if take_committed && let Some((key, value)) = iter.page.pop_front() {
                self.range_keys_seen += 1;
                if self.range_keys_seen > self.limits.range_scan_keys_max {
                    return Err(LimitExceeded::RangeScan {
                        limit: self.limits.range_scan_keys_max,
                    }
                    .into());
                }
                self.range_reads[iter.record].reads.push(KvRead {
                    key: key.clone(),
                    version: Some(value.version),
                });
                entry = Some((key, value.value));
            }
            if take_own && let Some((key, value)) = iter.own.pop_front() {
                // The call's own write shadows the committed value; a delete hides it.
                entry = value.map(|v| (key, v));
            }
            if let Some((key, value)) = entry {
                // How far the call saw: a re-check covers up to here, own writes
                // included, so a key inserted before this one is a phantom.
                self.range_reads[iter.record].last = Some(key.clone());
                let mut out = Vec::with_capacity(4 + key.len() + value.len());
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(&key);
                out.extend_from_slice(&value);
                return Ok(self.stage(out));
            }
        }
    }

    fn emit(&mut self, name: Vec<u8>, payload: Vec<u8>) -> Result<(), HostTrap> {
        if self.events.len() >= self.limits.events_per_call_max {
            return Err(LimitExceeded::Events {
                limit: self.limits.events_per_call_max,
            }
            .into());
        }
        let size = name.len() + payload.len();
        if size > self.limits.event_bytes_max {
            return Err(LimitExceeded::EventSize {
                size_bytes: size,
                limit_bytes: self.limits.event_bytes_max,
            }
            .into());
        }
        let name = String::from_utf8(name).map_err(|_| abi("event name is not UTF-8"))?;
        self.events.push(ContractEvent {
            contract: self.namespace.clone(),
            name,
            payload,
        });
        Ok(())
    }

    fn log(&mut self, level: i32, message: &[u8]) {
        if self.log_bytes + message.len() > self.limits.log_bytes_max {
            return;
        }
        self.log_bytes += message.len();
        self.logs.push(LogLine {
            level: level.clamp(0, 3) as u8,
            message: String::from_utf8_lossy(message).into_owned(),
        });
    }

    fn set_result(&mut self, bytes: Vec<u8>) -> Result<(), HostTrap> {
        if self.result.is_some() {
            return Err(abi("return_value called twice"));
        }
        if bytes.len() > self.limits.return_bytes_max {
            return Err(LimitExceeded::ReturnSize {
                size_bytes: bytes.len(),
                limit_bytes: self.limits.return_bytes_max,
            }
            .into());
        }
        self.result = Some(bytes);
        Ok(())
    }
}

type Ctx<'a> = Caller<'a, Simulator>;

/// Charges a host call: the base cost plus `bytes` moved.
fn charge(caller: &mut Ctx<'_>, bytes: usize) -> Result<(), HostTrap> {
    pay(caller, HOST_CALL_FUEL + bytes as u64 * FUEL_PER_BYTE)
}

/// Charges `bytes` moved, with no base cost (more of a call already charged).
fn charge_bytes(caller: &mut Ctx<'_>, bytes: usize) -> Result<(), HostTrap> {
    pay(caller, bytes as u64 * FUEL_PER_BYTE)
}

/// Takes `cost` fuel, or all that is left and a fuel error.
fn pay(caller: &mut Ctx<'_>, cost: u64) -> Result<(), HostTrap> {
    let fuel = caller.get_fuel().unwrap_or(0);
    if fuel < cost {
        // Burn what is left so that the call reports exhaustion like a wasm instruction would.
        let _ = caller.set_fuel(0);
        return Err(LimitExceeded::Fuel { limit: 0 }.into());
    }
    let _ = caller.set_fuel(fuel - cost);
    Ok(())
}

fn memory(caller: &Ctx<'_>) -> Result<Memory, HostTrap> {
    caller
        .data()
        .memory
        .ok_or_else(|| abi("host function called before the module's memory was bound"))
}

/// Copies `len` bytes at `ptr` out of guest memory (bounds-checked), charging for them.
/// Callers check `len` against the relevant limit first, so nothing large is copied.
fn read_bytes(caller: &mut Ctx<'_>, ptr: i32, len: i32) -> Result<Vec<u8>, HostTrap> {
    let (start, len) = span(ptr, len)?;
    charge(caller, len)?;
    let memory = memory(caller)?;
    memory
        .data(&*caller)
        .get(start..start + len)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| abi(format!("buffer {ptr}+{len} is outside linear memory")))
}

/// Reads a key, checking its length against `key_bytes_max` before copying.
fn read_key(caller: &mut Ctx<'_>, ptr: i32, len: i32) -> Result<Vec<u8>, HostTrap> {
    caller.data().check_key_len(span(ptr, len)?.1)?;
    read_bytes(caller, ptr, len)
}

fn span(ptr: i32, len: i32) -> Result<(usize, usize), HostTrap> {
    let start = u32::try_from(ptr).map_err(|_| abi(format!("negative pointer {ptr}")))? as usize;
    let len = u32::try_from(len).map_err(|_| abi(format!("negative length {len}")))? as usize;
    Ok((start, len))
}

/// Adds the `runnel` host functions to `linker`.
pub(crate) fn define(linker: &mut Linker<Simulator>) -> wasmtime::Result<()> {
    let m = crate::abi::IMPORT_MODULE;
    linker.func_wrap(m, "state_get", |mut c: Ctx<'_>, kp: i32, kl: i32| {
        let key = read_key(&mut c, kp, kl)?;
        let len = c.data_mut().get(key)?;
        charge(&mut c, len.max(0) as usize)?;
        Ok::<_, wasmtime::Error>(len)
    })?;
    linker.func_wrap(
        m,
        "state_put",
        |mut c: Ctx<'_>, kp: i32, kl: i32, vp: i32, vl: i32| {
            let key = read_key(&mut c, kp, kl)?;
            c.data().check_value_len(span(vp, vl)?.1)?;
            let value = read_bytes(&mut c, vp, vl)?;
            c.data_mut().put(key, Some(value))?;
            Ok::<_, wasmtime::Error>(())
        },
    )?;
    linker.func_wrap(m, "state_delete", |mut c: Ctx<'_>, kp: i32, kl: i32| {
        let key = read_key(&mut c, kp, kl)?;
        c.data_mut().put(key, None)?;
        Ok::<_, wasmtime::Error>(())
    })?;
    linker.func_wrap(
        m,
        "range_open",
        |mut c: Ctx<'_>, sp: i32, sl: i32, ep: i32, el: i32| {
            let start = read_key(&mut c, sp, sl)?;
            let end = if el == 0 {
                None
            } else {
                Some(read_key(&mut c, ep, el)?)
            };
            Ok::<_, wasmtime::Error>(c.data_mut().range_open(start, end)?)
        },
    )?;
    linker.func_wrap(m, "range_next", |mut c: Ctx<'_>, handle: i32| {
        charge(&mut c, 0)?;
        let next = c.data_mut().range_next(handle);
        let fetched = c.data_mut().take_fetched_bytes();
        charge_bytes(&mut c, fetched)?;
        let len = next?;
        charge(&mut c, len.max(0) as usize)?;
        Ok::<_, wasmtime::Error>(len)
    })?;
    linker.func_wrap(
        m,
        "event_emit",
        |mut c: Ctx<'_>, np: i32, nl: i32, pp: i32, pl: i32| {
            let size = span(np, nl)?.1 + span(pp, pl)?.1;
            let limit = c.data().limits.event_bytes_max;
            if size > limit {
                return Err(HostTrap::from(LimitExceeded::EventSize {
                    size_bytes: size,
                    limit_bytes: limit,
                })
                .into());
            }
            let name = read_bytes(&mut c, np, nl)?;
            let payload = read_bytes(&mut c, pp, pl)?;
            c.data_mut().emit(name, payload)?;
            Ok::<_, wasmtime::Error>(())
        },
    )?;
    linker.func_wrap(m, "ctx_tx_id", |mut c: Ctx<'_>| {
        let bytes = c.data().tx_id.clone();
        charge(&mut c, bytes.len())?;
        Ok::<_, wasmtime::Error>(c.data_mut().stage(bytes))
    })?;
    linker.func_wrap(m, "ctx_creator", |mut c: Ctx<'_>| {
        let bytes = c.data().creator.clone();
        charge(&mut c, bytes.len())?;
        Ok::<_, wasmtime::Error>(c.data_mut().stage(bytes))
    })?;
    linker.func_wrap(m, "ctx_timestamp_ms", |mut c: Ctx<'_>| {
        charge(&mut c, 0)?;
        Ok::<_, wasmtime::Error>(c.data().timestamp_ms as i64)
    })?;
    linker.func_wrap(m, "log", |mut c: Ctx<'_>, level: i32, p: i32, l: i32| {
        let max = c.data().limits.log_bytes_max;
        // An oversized log line is dropped, not an error: logs never change the outcome.
        if span(p, l)?.1 <= max {
            let message = read_bytes(&mut c, p, l)?;
            c.data_mut().log(level, &message);
        }
        Ok::<_, wasmtime::Error>(())
    })?;
    linker.func_wrap(m, "result_read", |mut c: Ctx<'_>, dst: i32| {
        let memory = memory(&c)?;
        let (start, _) = span(dst, 0)?;
        let (data, sim) = memory.data_and_store_mut(&mut c);
        let len = sim.buffer.len();
        let target = data.get_mut(start..start + len).ok_or_else(|| {
            abi(format!(
                "result_read target {dst}+{len} is outside linear memory"
            ))
        })?;
        target.copy_from_slice(&sim.buffer);
        Ok::<_, wasmtime::Error>(())
    })?;
    linker.func_wrap(m, "return_value", |mut c: Ctx<'_>, p: i32, l: i32| {
        let max = c.data().limits.return_bytes_max;
        let (_, len) = span(p, l)?;
        if len > max {
            return Err(HostTrap::from(LimitExceeded::ReturnSize {
                size_bytes: len,
                limit_bytes: max,
            })
            .into());
        }
        let bytes = read_bytes(&mut c, p, l)?;
        c.data_mut().set_result(bytes)?;
        Ok::<_, wasmtime::Error>(())
    })?;
    linker.func_wrap(m, "abort", |mut c: Ctx<'_>, p: i32, l: i32| {
        let (_, len) = span(p, l)?;
        let bytes = read_bytes(&mut c, p, len.min(ABORT_MESSAGE_BYTES_MAX) as i32)?;
        let message = String::from_utf8_lossy(&bytes).into_owned();
        Err::<(), _>(HostTrap::Abort(message).into())
    })?;
    Ok(())
}
