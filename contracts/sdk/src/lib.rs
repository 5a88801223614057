//! Write Runnel smart contracts in Rust.
//!
//! A contract is a module of functions marked with [`#[contract]`](contract). Each `pub fn`
//! whose first parameter is `&mut Context` becomes a function clients can call by name:
//!
//! ```
//! #[runnel_contract::contract]
//! pub mod kv {
//!     use runnel_contract::prelude::*;
//!
//!     pub fn put(ctx: &mut Context, key: String, value: String) -> Result<()> {
//!         ctx.put_bytes(key, value)
//!     }
//!
//!     pub fn get(ctx: &mut Context, key: String) -> Result<Option<String>> {
//!         match ctx.get_bytes(key)? {
//!             Some(bytes) => Ok(Some(String::from_utf8(bytes).map_err(|_| "not UTF-8")?)),
//!             None => Ok(None),
//!         }
//!     }
//! }
//! ```
//!
//! Compiled to `wasm32-unknown-unknown`, the crate (a `cdylib`) is a module the node runs:
//! this crate provides the guest side of the ABI (docs/abi.md) and the macro adds one
//! `runnel_fn_<name>` export per function. Compiled natively, the same code runs in the
//! [`testing`] harness, an in-memory ledger for unit tests.
//!
//! Arguments arrive as bytes and are decoded by the convention in [`args`]: JSON, or the
//! raw text if it is not JSON (`hello`, `100`). A function returns
//! [`Result<T>`](Result); `Ok` sends `T` as JSON, `Err` (or a panic) ends the call with
//! the error's message and discards its writes and events.
//!
//! Guide: docs/contracts.md.

// Lets the `#[contract]` expansion's `::runnel_contract` paths work inside this crate's
// own tests.
extern crate self as runnel_contract;

pub mod args;
mod context;
mod error;
mod host;
mod key;

#[cfg(target_arch = "wasm32")]
mod abi;
#[cfg(target_arch = "wasm32")]
pub mod alloc;

/// The contract heap (see [`alloc`]); turn off the `bump-allocator` feature to bring your
/// own `#[global_allocator]`.
#[cfg(all(target_arch = "wasm32", feature = "bump-allocator"))]
#[global_allocator]
static ALLOCATOR: alloc::BumpAllocator = alloc::BumpAllocator::new();
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

pub use context::{Context, Creator, Range};
pub use error::{Error, Result};
pub use host::{Host, LogLevel, RangeId};
pub use key::CompositeKey;
pub use runnel_contract_macros::contract;
pub use serde;
pub use serde_json;

/// A contract: what `#[contract]` generates as `Contract` inside the module.
pub trait Contract {
    /// The names clients call the functions by, in declaration order.
    const FUNCTIONS: &'static [&'static str];

    /// Calls `function` with `args` (one byte string per argument) and returns its result
    /// encoded as JSON. Used by the [`testing`] harness and anything else that runs a
    /// contract natively.
    fn dispatch(ctx: &mut Context<'_>, function: &str, args: &[Vec<u8>]) -> Result<Vec<u8>>;
}

/// What a contract module needs: `use runnel_contract::prelude::*;`.
pub mod prelude {
    pub use crate::{CompositeKey, Context, Creator, Error, LogLevel, Result, bail, ensure};
    pub use serde::{Deserialize, Serialize};
}

/// Support for the code `#[contract]` generates. Not a stable API.
#[doc(hidden)]
pub mod __private {
    use serde::de::DeserializeOwned;

    use crate::{Error, Result};

    #[cfg(target_arch = "wasm32")]
    pub use crate::abi::run;
    pub use crate::args::encode_return;

    /// Checks the number of arguments.
    pub fn check_arity(function: &str, args: &[Vec<u8>], expected: usize) -> Result<()> {
        if args.len() == expected {
            return Ok(());
        }
        let noun = if expected == 1 {
            "argument"
        } else {
            "arguments"
        };
        Err(Error::new(format!(
            "{function}: expected {expected} {noun}, got {}",
            args.len()
        )))
    }

    /// Decodes argument `index` (0-based) called `name`.
    pub fn decode_arg<T: DeserializeOwned>(
        function: &str,
        args: &[Vec<u8>],
        index: usize,
        name: &str,
    ) -> Result<T> {
        let bytes = args.get(index).map(Vec::as_slice).unwrap_or_default();
        crate::args::decode(bytes).map_err(|reason| {
            Error::new(format!(
                "{function}: argument {} ({name}): {reason}",
                index + 1
            ))
        })
    }

    /// The error for a function name the contract does not have.
    pub fn unknown_function(function: &str, known: &[&str]) -> Error {
        if known.is_empty() {
            return Error::new(format!(
                "unknown function {function:?}; this contract has no functions"
            ));
        }
        Error::new(format!(
            "unknown function {function:?}; this contract has: {}",
            known.join(", ")
        ))
    }
}
