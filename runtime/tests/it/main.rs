//! The runtime's integration tests, in one binary: each module drives the public API on
//! real Wasm modules (hand-written WAT, and the example contracts built for wasm32).

// Not every module uses every helper.
#[allow(dead_code)]
mod common;
mod conformance;
mod hostile;
mod simulation;
