//! The settings of the `runnel` command, as a library: `runnel.toml` parsed and checked
//! ([`config::NodeConfig::parse`]), its defaults and the template `runnel init` writes.
//! The binary reads its settings through it, and so does the fuzz target that feeds the
//! parser any text (node/fuzz-targets); everything else of the command is the binary's.

pub mod config;
