//! The `runnel` command's subcommands, beside `exec` (in main.rs).

pub mod bench;
pub mod client;
pub mod node;
mod plots;
mod unary;
