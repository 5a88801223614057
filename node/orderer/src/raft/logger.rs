//! Raft's log lines (it speaks slog) as the node's own `tracing` events, under the target
//! `raft` (Raft names the orderer's id in each): `RUST_LOG=raft=debug` shows elections
//! and appends.

use std::fmt::Write as _;

use slog::{Drain, KV, Level, OwnedKVList, Record};

/// A slog logger whose records go to `tracing`.
pub fn logger() -> slog::Logger {
    slog::Logger::root(ToTracing.fuse(), slog::o!())
}

struct ToTracing;

impl Drain for ToTracing {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record<'_>, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut fields = Fields(String::new());
        let _ = record.kv().serialize(record, &mut fields);
        let _ = values.serialize(record, &mut fields);
        let message = record.msg();
        let fields = fields.0;
        match record.level() {
            Level::Critical | Level::Error => {
                tracing::error!(target: "raft", "{message}{fields}")
            }
            Level::Warning => tracing::warn!(target: "raft", "{message}{fields}"),
            Level::Info => tracing::info!(target: "raft", "{message}{fields}"),
            Level::Debug => tracing::debug!(target: "raft", "{message}{fields}"),
            Level::Trace => tracing::trace!(target: "raft", "{message}{fields}"),
        }
        Ok(())
    }
}

/// `key=value` pairs, each after a space.
struct Fields(String);

impl slog::Serializer for Fields {
    fn emit_arguments(&mut self, key: slog::Key, value: &std::fmt::Arguments<'_>) -> slog::Result {
        let _ = write!(self.0, " {key}={value}");
        Ok(())
    }
}
