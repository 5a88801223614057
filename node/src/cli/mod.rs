//! The `runnel` command's subcommands, beside `exec` (in main.rs).

pub mod client;
pub mod node;
