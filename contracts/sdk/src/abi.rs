//! The guest side of ABI v1 (docs/abi.md): the `runnel` imports, the module's fixed
//! exports, the panic hook and the entry point every `runnel_fn_<name>` export calls.
//! Compiled for `wasm32` only.

use std::alloc::{Layout, alloc};

use crate::args::decode_byte_list;
use crate::host::{Host, LogLevel, RangeId};
use crate::{Context, Result};

#[link(wasm_import_module = "runnel")]
unsafe extern "C" {
    #[link_name = "state_get"]
    fn runnel_state_get(key_ptr: i32, key_len: i32) -> i64;
    #[link_name = "state_put"]
    fn runnel_state_put(key_ptr: i32, key_len: i32, val_ptr: i32, val_len: i32);
    #[link_name = "state_delete"]
    fn runnel_state_delete(key_ptr: i32, key_len: i32);
    #[link_name = "range_open"]
    fn runnel_range_open(start_ptr: i32, start_len: i32, end_ptr: i32, end_len: i32) -> i32;
    #[link_name = "range_next"]
    fn runnel_range_next(handle: i32) -> i64;
    #[link_name = "event_emit"]
    fn runnel_event_emit(name_ptr: i32, name_len: i32, payload_ptr: i32, payload_len: i32);
    #[link_name = "ctx_tx_id"]
    fn runnel_ctx_tx_id() -> i64;
    #[link_name = "ctx_creator"]
    fn runnel_ctx_creator() -> i64;
    #[link_name = "ctx_timestamp_ms"]
    fn runnel_ctx_timestamp_ms() -> i64;
    #[link_name = "log"]
    fn runnel_log(level: i32, ptr: i32, len: i32);
    #[link_name = "result_read"]
    fn runnel_result_read(dst_ptr: i32);
    #[link_name = "return_value"]
    fn runnel_return_value(ptr: i32, len: i32);
    #[link_name = "abort"]
    fn runnel_abort(ptr: i32, len: i32);
}

/// Marks the module as speaking ABI version 1. Never called.
#[unsafe(no_mangle)]
pub extern "C" fn runnel_abi_v1() {}

/// Returns `len` writable bytes for the host to put call arguments in. The module is
/// instantiated per call, so the bytes are never freed.
#[unsafe(no_mangle)]
pub extern "C" fn runnel_alloc(len: i32) -> i32 {
    let Ok(len) = usize::try_from(len) else {
        abort_with("runnel_alloc: negative length");
    };
    if len == 0 {
        // Any aligned non-null pointer serves for zero bytes.
        return 1;
    }
    let Ok(layout) = Layout::array::<u8>(len) else {
        abort_with("runnel_alloc: length too large");
    };
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { alloc(layout) };
    if ptr.is_null() {
        abort_with("runnel_alloc: out of memory");
    }
    ptr as i32
}

fn wasm_ptr<T>(p: *const T) -> i32 {
    p as usize as i32
}

fn wasm_len(n: usize) -> i32 {
    // Every buffer lives in a 32-bit linear memory, so its length fits.
    n as i32
}

/// Ends the call with a contract error carrying `message`.
pub(crate) fn abort_with(message: &str) -> ! {
    // SAFETY: the pointer and length describe `message`, alive for the call.
    unsafe { runnel_abort(wasm_ptr(message.as_ptr()), wasm_len(message.len())) };
    // `abort` does not return; should a host ever let it, trap.
    core::arch::wasm32::unreachable()
}

/// Copies the host's result buffer (of `len` bytes) out.
fn take_result(len: i64) -> Vec<u8> {
    let Ok(len) = usize::try_from(len) else {
        abort_with("ABI: negative result length");
    };
    let mut buf = Vec::<u8>::with_capacity(len);
    // SAFETY: the host writes exactly `len` bytes at the pointer, inside the buffer's
    // capacity, before `set_len` exposes them.
    unsafe {
        runnel_result_read(wasm_ptr(buf.as_mut_ptr()));
        buf.set_len(len);
    }
    buf
}

/// The node, through the `runnel` imports.
struct WasmHost;

impl Host for WasmHost {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        // SAFETY (all calls below): pointers and lengths describe live Rust buffers; the
        // host only reads them, except `result_read`, see `take_result`.
        let n = unsafe { runnel_state_get(wasm_ptr(key.as_ptr()), wasm_len(key.len())) };
        (n >= 0).then(|| take_result(n))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) {
        unsafe {
            runnel_state_put(
                wasm_ptr(key.as_ptr()),
                wasm_len(key.len()),
                wasm_ptr(value.as_ptr()),
                wasm_len(value.len()),
            )
        }
    }

    fn delete(&mut self, key: &[u8]) {
        unsafe { runnel_state_delete(wasm_ptr(key.as_ptr()), wasm_len(key.len())) }
    }

    fn range_open(&mut self, start: &[u8], end: Option<&[u8]>) -> RangeId {
        let end = end.unwrap_or_default();
        let handle = unsafe {
            runnel_range_open(
                wasm_ptr(start.as_ptr()),
                wasm_len(start.len()),
                wasm_ptr(end.as_ptr()),
                wasm_len(end.len()),
            )
        };
        RangeId(handle)
    }

    fn range_next(&mut self, range: RangeId) -> Option<(Vec<u8>, Vec<u8>)> {
        let n = unsafe { runnel_range_next(range.0) };
        if n < 0 {
            return None;
        }
        let entry = take_result(n);
        // `u32 key_len, key, value`.
        let Some((head, rest)) = entry.split_first_chunk::<4>() else {
            abort_with("ABI: range entry shorter than its key length");
        };
        let key_len = u32::from_le_bytes(*head) as usize;
        let Some((key, value)) = rest.split_at_checked(key_len) else {
            abort_with("ABI: range entry key runs past the entry");
        };
        Some((key.to_vec(), value.to_vec()))
    }

    fn emit(&mut self, name: &str, payload: &[u8]) {
        unsafe {
            runnel_event_emit(
                wasm_ptr(name.as_ptr()),
                wasm_len(name.len()),
                wasm_ptr(payload.as_ptr()),
                wasm_len(payload.len()),
            )
        }
    }

    fn tx_id(&mut self) -> String {
        let n = unsafe { runnel_ctx_tx_id() };
        String::from_utf8_lossy(&take_result(n)).into_owned()
    }

    fn creator(&mut self) -> Vec<u8> {
        let n = unsafe { runnel_ctx_creator() };
        take_result(n)
    }

    fn timestamp_ms(&mut self) -> u64 {
        unsafe { runnel_ctx_timestamp_ms() as u64 }
    }

    fn log(&mut self, level: LogLevel, message: &str) {
        unsafe {
            runnel_log(
                level as i32,
                wasm_ptr(message.as_ptr()),
                wasm_len(message.len()),
            )
        }
    }
}

/// A contract function behind its argument decoding, as `#[contract]` generates it.
pub type Call = fn(&mut Context<'_>, &[Vec<u8>]) -> Result<Vec<u8>>;

/// Reports a panic as the call's contract error: `panicked at file:line:col: message`.
fn panic_hook(info: &std::panic::PanicHookInfo<'_>) {
    let message = info.payload_as_str().unwrap_or("Box<dyn Any>");
    let text = match info.location() {
        Some(at) => format!(
            "panicked at {}:{}:{}: {message}",
            at.file(),
            at.line(),
            at.column()
        ),
        None => format!("panicked: {message}"),
    };
    abort_with(&text);
}

/// Runs one contract function for the `runnel_fn_<name>` export the macro generated:
/// decodes the argument list the host wrote at `args_ptr`, calls `function`, and ends the
/// call with `return_value` or `abort`.
pub fn run(args_ptr: i32, args_len: i32, function: Call) {
    std::panic::set_hook(Box::new(panic_hook));
    let Ok(args_len) = usize::try_from(args_len) else {
        abort_with("ABI: negative argument list length");
    };
    let encoded: &[u8] = if args_len == 0 {
        &[]
    } else {
        // SAFETY: the host wrote `args_len` bytes at `args_ptr`, which `runnel_alloc`
        // returned; nothing else refers to them during the call.
        unsafe { core::slice::from_raw_parts(args_ptr as u32 as usize as *const u8, args_len) }
    };
    let args = match decode_byte_list(encoded) {
        Ok(args) => args,
        Err(e) => abort_with(&format!("ABI: malformed argument list: {e}")),
    };
    let mut host = WasmHost;
    let mut ctx = Context::new(&mut host);
    match function(&mut ctx, &args) {
        Ok(result) => unsafe {
            runnel_return_value(wasm_ptr(result.as_ptr()), wasm_len(result.len()))
        },
        Err(error) => abort_with(error.message()),
    }
}
