//! Threads that stop their component for all to see when an invariant breaks.
//!
//! The ledger's long-lived threads (the validator's stages, the orderer's flusher and
//! sealer, a Raft member's loop) `assert!` what would corrupt data if it did not hold.
//! A panic that ends one thread alone would leave the others waiting on it, unseen:
//! [`guarded`] hands it to the component instead, which records it as its failure
//! (`/healthz` then answers 503) and stops.

/// A thread's body: a panic in `run` is handed to `failed`, with `name` (the thread's)
/// and the panic's message.
pub fn guarded(
    name: String,
    run: impl FnOnce() + Send + 'static,
    failed: impl FnOnce(String) + Send + 'static,
) -> impl FnOnce() + Send + 'static {
    move || {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".to_string());
            failed(format!("{name}: {message}"));
        }
    }
}
